//! The example providers and templates in `examples/` (one per cloud, as the README's
//! table lists them) are held to what KQueen would take: the provider's settings as the REST
//! API types and checks them, the template's overrides as they refine the cluster schema,
//! and a request that chooses nothing (defaults and fixed values) as the topology builds it.

use serde_json::{Map, Value};

use super::settings::{self as s};
use super::topology;
use crate::provisioner::schema::parse_overrides;
use crate::provisioner::{ParamKind, Params};

const EXAMPLES: [(&str, &str); 9] = [
    ("docker", include_str!("examples/docker.json")),
    ("aws", include_str!("examples/aws.json")),
    ("aws-eks", include_str!("examples/aws-eks.json")),
    ("azure", include_str!("examples/azure.json")),
    ("azure-aks", include_str!("examples/azure-aks.json")),
    ("gcp", include_str!("examples/gcp.json")),
    ("gcp-gke", include_str!("examples/gcp-gke.json")),
    ("vsphere", include_str!("examples/vsphere.json")),
    ("openstack", include_str!("examples/openstack.json")),
];

fn object<'a>(v: &'a Value, key: &str, example: &str) -> &'a Map<String, Value> {
    v.get(key)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("{example}: '{key}' must be an object"))
}

fn text<'a>(v: &'a Map<String, Value>, key: &str, example: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| panic!("{example}: '{key}' must be a non-empty text"))
}

/// The settings as `POST /api/v1/providers` takes them: each of the JSON type its schema
/// gives it, none secret; then validated and checked as the catalog does.
fn provider_config(settings: &Map<String, Value>, example: &str) -> Params {
    let schema = s::provider_schema();
    let mut input = Params::new();
    for (name, value) in settings {
        let spec = schema
            .get(name)
            .unwrap_or_else(|| panic!("{example}: '{name}' is not a setting"));
        assert!(!spec.secret, "{example}: '{name}' is secret: keep it out");
        let text = match (&spec.kind, value) {
            (ParamKind::Boolean { .. }, Value::Bool(b)) => b.to_string(),
            (ParamKind::Boolean { .. }, _) => panic!("{example}: '{name}' must be true/false"),
            (_, Value::String(t)) => t.clone(),
            _ => panic!("{example}: '{name}' must be text"),
        };
        input.insert(name.clone(), text);
    }
    // The kubeconfig is the operator's own: a stand-in passes the schema's presence check.
    input.insert(s::MANAGEMENT_KUBECONFIG.into(), "stand-in".into());
    let mut valid = schema
        .validate(&input)
        .unwrap_or_else(|e| panic!("{example}: settings: {} {}", e.field, e.message));
    valid.remove(s::MANAGEMENT_KUBECONFIG);
    s::check_provider(&valid)
        .unwrap_or_else(|e| panic!("{example}: settings: {} {}", e.field, e.message));
    valid
}

#[test]
fn every_example_is_what_kqueen_takes() {
    for (example, raw) in EXAMPLES {
        let doc: Value =
            serde_json::from_str(raw).unwrap_or_else(|e| panic!("{example}: not JSON: {e}"));
        let provider = object(&doc, "provider", example);
        let template = object(&doc, "template", example);
        assert_eq!(text(provider, "kind", example), "cluster-api", "{example}");
        assert_eq!(
            text(template, "provider", example),
            text(provider, "name", example),
            "{example}: the template names its provider"
        );
        for name in [
            text(provider, "name", example),
            text(template, "name", example),
        ] {
            assert!(
                s::is_label(name),
                "{example}: '{name}' is not a DNS-1123 label"
            );
        }
        text(template, "description", example);
        text(doc.as_object().expect("an object"), "notes", example);

        let config = provider_config(object(&doc["provider"], "settings", example), example);

        // REST takes the overrides as a JSON object; the core parses its text.
        let overrides = object(&doc["template"], "overrides", example);
        let parsed = parse_overrides(&Value::Object(overrides.clone()).to_string())
            .unwrap_or_else(|e| panic!("{example}: overrides: {:?} {}", e.key, e.message));
        let (schema, fixed) = s::cluster_schema()
            .refine(&parsed)
            .unwrap_or_else(|e| panic!("{example}: refine: {:?} {}", e.key, e.message));

        // Every default a template gives shows in the form (refine drops a multi-line
        // parameter's default without a word: such defaults would mislead the reader).
        for (name, o) in &parsed {
            if let (Some(default), None) = (&o.default, &o.fixed) {
                let spec = schema.get(name).expect("a refined parameter");
                assert_eq!(
                    spec.default_text().as_deref(),
                    Some(default.as_str()),
                    "{example}: the default of {name} is not kept"
                );
            }
        }
        // A request that chooses nothing: the template's defaults, then its fixed values.
        let mut params = schema
            .validate(&Params::new())
            .unwrap_or_else(|e| panic!("{example}: defaults: {:?} {}", e.key, e.message));
        params.extend(fixed);
        assert!(
            params.contains_key(s::VERSION),
            "{example}: the template gives a default Kubernetes version"
        );
        let shape = topology::shape(&params, &config)
            .unwrap_or_else(|e| panic!("{example}: topology: {:?} {}", e.key, e.message));
        assert_eq!(shape.pools.len(), 1, "{example}");
        assert_eq!(
            shape.region.is_some(),
            s::setting(&config, s::REGION_VARIABLE).is_some(),
            "{example}: a region variable comes with a default region"
        );
    }
}

#[test]
fn the_docker_example_is_the_quick_start() {
    let doc: Value = serde_json::from_str(EXAMPLES[0].1).expect("JSON");
    let config = provider_config(
        doc["provider"]["settings"].as_object().expect("settings"),
        "docker",
    );
    assert_eq!(s::setting(&config, s::CLUSTER_CLASS), Some("quick-start"));
    assert!(s::setting(&config, s::FLAVOR_VARIABLE).is_none());
    let fixed = doc["template"]["overrides"]["variables"]["fixed"]
        .as_str()
        .expect("the docker template fixes the variables");
    let variables: Map<String, Value> = serde_json::from_str(fixed).expect("a JSON object");
    for required in ["imageRepository", "etcdImageTag", "coreDNSImageTag"] {
        assert!(variables.contains_key(required), "{required}");
    }
}
