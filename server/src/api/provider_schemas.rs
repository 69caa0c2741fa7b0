//! The bodies of `POST /providers` and `PUT /providers/{name}` per provider kind, for the
//! OpenAPI document: a `oneOf` discriminated by `kind`, each kind's `settings` built from its
//! provisioner's `provider_schema` (types, required, limits, choices, defaults), so that a body
//! valid for the document is valid for the server.
//!
//! The provisioners also check some settings beyond their schema (a command line splits into
//! words, a key is a key, a file exists on this host). Those carry a `format` named in
//! [`FORMATS`], a word for what the text must be (the API fuzzer generates real values for
//! each, `scripts/api-fuzz-hooks.py`).

use kqueen_core::provisioner::{ParamKind, ParamSchema, ParamSpec, ProviderKind, Registry};
use serde_json::{json, Map, Value};

use super::dto::{dns_label, DNS_LABEL};

/// Settings checked beyond their schema, by kind and name: the `format` the document gives
/// them and what it means.
pub const FORMATS: &[(ProviderKind, &str, &str, &str)] = &[
    (
        ProviderKind::Command,
        "create_command",
        "command-line",
        "a command line: words split as a shell does (quotes, backslashes), no unquoted shell operator unless `shell` is on, the program absolute or looked up in PATH",
    ),
    (ProviderKind::Command, "delete_command", "command-line", ""),
    (ProviderKind::Command, "scale_command", "command-line", ""),
    (ProviderKind::Command, "upgrade_command", "command-line", ""),
    (ProviderKind::Command, "replace_command", "command-line", ""),
    (
        ProviderKind::Command,
        "environment",
        "env-lines",
        "`NAME=value` lines (upper-case names, not KQ_…, PATH or HOME); blank lines and # comments are skipped",
    ),
    (
        ProviderKind::Jenkins,
        "url",
        "http-url",
        "an http:// or https:// URL with a host, no credentials, query or fragment",
    ),
    (
        ProviderKind::Jenkins,
        "job",
        "job-path",
        "a job's name, in folders written folder/job; no empty, . or .. element",
    ),
    (ProviderKind::Jenkins, "delete_job", "job-path", ""),
    (
        ProviderKind::Jenkins,
        "username",
        "user-name",
        "a Jenkins user name (no ':')",
    ),
    (
        ProviderKind::Jenkins,
        "kubeconfig_artifact",
        "artifact-path",
        "a path relative to the build's artifacts; no empty, . or .. element",
    ),
    (
        ProviderKind::Jenkins,
        "ca_cert",
        "pem-certificates",
        "one or more PEM certificates",
    ),
    (
        ProviderKind::Hosted,
        "etcd_endpoints",
        "https-url-list",
        "https:// URLs, comma-separated",
    ),
    (
        ProviderKind::Hosted,
        "etcd_client_ca_key",
        "pem-private-key",
        "a PEM private key (PKCS#8)",
    ),
    (ProviderKind::Hosted, "etcd_admin_key", "pem-private-key", ""),
    (
        ProviderKind::Hosted,
        "admin_kubeconfig",
        "kubeconfig",
        "a kubeconfig (YAML) without credential plugins; empty: none",
    ),
    (
        ProviderKind::Hosted,
        "address",
        "ip-address",
        "an IPv4 or IPv6 address; empty: 127.0.0.1",
    ),
    (
        ProviderKind::ClusterApi,
        "management_kubeconfig",
        "required-kubeconfig",
        "a kubeconfig (YAML) without credential plugins",
    ),
    (
        ProviderKind::ClusterApi,
        "pod_cidr",
        "cidr",
        "a CIDR block, like 192.168.0.0/16 or fd00::/108; empty: the ClusterClass's default",
    ),
    (ProviderKind::ClusterApi, "service_cidr", "cidr", ""),
];

/// Settings that name things in Kubernetes, checked by the provisioner to be such names: by
/// kind and name, the pattern the document gives them and what it means.
const NAMES: &[(ProviderKind, &str, &str, &str)] = &[
    (
        ProviderKind::ClusterApi,
        "namespace",
        LABEL_OR_EMPTY,
        "a Kubernetes name: lowercase letters, digits and '-', at most 63; with one namespace per tenant, at most 22",
    ),
    (
        ProviderKind::ClusterApi,
        "cluster_class",
        DNS_LABEL,
        K8S_NAME,
    ),
    (
        ProviderKind::ClusterApi,
        "class_namespace",
        LABEL_OR_EMPTY,
        K8S_NAME,
    ),
    (
        ProviderKind::ClusterApi,
        "region_variable",
        VARIABLE_NAME,
        "a ClusterClass variable name: letters, digits, '_', '-', '.'",
    ),
    (
        ProviderKind::ClusterApi,
        "flavor_variable",
        VARIABLE_NAME,
        "",
    ),
];

/// A DNS-1123 label, or nothing (the setting's default applies).
const LABEL_OR_EMPTY: &str = concat!("^(", dns_label!(), ")?$");
const VARIABLE_NAME: &str = "^[A-Za-z0-9_.-]*$";
const K8S_NAME: &str = "a Kubernetes name: lowercase letters, digits and '-', at most 63";

/// A hosted provider's `versions` per runtime: the binaries (runtime `process`, files on this
/// host) or the container images (runtime `kubernetes`) of each version.
const HOSTED_VERSIONS: [(&str, &str, &str); 2] = [
    (
        "process",
        "hosted-binaries",
        "one line per version: `1.33 /path/kube-apiserver /path/kube-controller-manager [/path/kube-scheduler]` (absolute paths of files on the KQueen host; without the scheduler's, kube-scheduler beside the controller manager)",
    ),
    (
        "kubernetes",
        "hosted-images",
        "one line per version: `1.33 <registry>/kube-apiserver:v1.33.2 <registry>/kube-controller-manager:v1.33.2 [<registry>/kube-scheduler:v1.33.2]` (without the scheduler's, the controller manager's image with kube-scheduler for kube-controller-manager)",
    ),
];

/// The PEM certificates a hosted provider takes: each is checked to hold one.
const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----";
const HOSTED_CERTIFICATES: [&str; 3] = ["etcd_ca", "etcd_client_ca", "etcd_admin_cert"];

/// One line of text; blanks the server trims (tabs, line breaks) may surround it.
const ONE_LINE: &str = r"^[\t-\r\x85]*[^\x00-\x1f\x7f-\x9f]*[\t-\r\x85]*$";
/// One line of text with at least one character besides blanks.
const ONE_LINE_NOT_BLANK: &str = r"^[\t-\r\x85]*[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t-\r\x85]*$";

/// The component schemas of the provider bodies: `ProviderIn` and `ProviderUpdateIn` (each a
/// `oneOf` by kind) and one schema per kind and body.
pub fn components(registry: &Registry) -> Map<String, Value> {
    let mut out = Map::new();
    for (body, update) in [("ProviderIn", false), ("ProviderUpdateIn", true)] {
        let mut one_of = Vec::new();
        let mut mapping = Map::new();
        for kind in registry.kinds() {
            let Some(p) = registry.get(kind) else {
                continue;
            };
            let name = format!("{body}{}", title_case(kind.as_str()));
            let reference = format!("#/components/schemas/{name}");
            one_of.push(json!({"$ref": reference}));
            mapping.insert(kind.as_str().to_owned(), json!(reference));
            out.insert(name, kind_body(kind, &p.provider_schema(), update));
        }
        let what = if update {
            "Edits a provider. `kind` must be the provider's (a provider's kind cannot change: \
             another answers 409); secret settings left out or empty keep their stored value; \
             every other setting is replaced."
        } else {
            "Creates a provider of `kind`, with that kind's settings (also at \
             `/api/v1/provider-kinds`). Secret settings go to the vault and are never returned."
        };
        out.insert(
            body.to_owned(),
            json!({
                "description": what,
                "oneOf": one_of,
                "discriminator": {"propertyName": "kind", "mapping": mapping},
            }),
        );
    }
    out
}

/// `cluster-api` -> `ClusterApi`: schema names of letters only.
fn title_case(s: &str) -> String {
    s.split('-')
        .map(|word| {
            let mut c = word.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The body for one kind.
fn kind_body(kind: ProviderKind, schema: &ParamSchema, update: bool) -> Value {
    let settings = if kind == ProviderKind::Hosted {
        // Which versions are valid depends on the runtime: one settings schema per runtime.
        let variants: Vec<Value> = HOSTED_VERSIONS
            .iter()
            .map(|(runtime, format, about)| {
                let mut s = settings(kind, schema, update);
                let props = &mut s["properties"];
                props["runtime"] = if *runtime == "process" {
                    json!({"description": "Where control planes run; empty: process",
                           "enum": ["process", "", null]})
                } else {
                    json!({"description": "Where control planes run", "type": "string",
                           "enum": ["kubernetes"]})
                };
                props["versions"]["format"] = json!(format);
                props["versions"]["description"] = json!(about);
                if *runtime != "process" {
                    required(&mut s, "runtime");
                }
                s["title"] = json!(format!("runtime {runtime}"));
                s
            })
            .collect();
        json!({ "oneOf": variants })
    } else {
        settings(kind, schema, update)
    };
    let mut body = json!({
        "type": "object",
        "title": kind.as_str(),
        "required": ["name", "kind"],
        "properties": {
            "name": {"type": "string", "pattern": DNS_LABEL, "maxLength": 63, "example": "lab",
                     "description": if update { "DNS-1123 label (a new name renames it)" } else { "DNS-1123 label" }},
            "kind": {"type": "string", "enum": [kind.as_str()]},
            "description": {"type": "string", "maxLength": 500},
            "settings": settings,
            "disabled": {"type": "boolean"},
        },
    });
    let needs_settings = schema
        .specs()
        .iter()
        .any(|s| is_required(s, update) || kind == ProviderKind::Hosted);
    if needs_settings {
        required(&mut body, "settings");
    }
    body
}

fn required(schema: &mut Value, name: &str) {
    if let Some(list) = schema
        .as_object_mut()
        .map(|o| o.entry("required").or_insert_with(|| json!([])))
        .and_then(Value::as_array_mut)
    {
        list.push(json!(name));
    }
}

/// Whether a body must give the setting: required without a default (on edit, secret ones
/// keep their stored value when left out).
fn is_required(spec: &ParamSpec, update: bool) -> bool {
    spec.required && spec.default_text().is_none() && !(update && spec.secret)
}

/// The `settings` object of a kind: every setting with the JSON type the API takes for it,
/// and nothing else.
fn settings(kind: ProviderKind, schema: &ParamSchema, update: bool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for spec in schema.specs() {
        let must = is_required(spec, update);
        if must {
            required.push(json!(spec.name));
        }
        properties.insert(spec.name.clone(), setting(kind, spec, must));
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One setting's schema. `null` leaves an optional setting out (its default applies).
fn setting(kind: ProviderKind, spec: &ParamSpec, must: bool) -> Value {
    let types = |t: &str| if must { json!(t) } else { json!([t, "null"]) };
    let mut s = match &spec.kind {
        ParamKind::Boolean { default } => json!({"type": types("boolean"), "default": default}),
        ParamKind::Integer { default, min, max } => {
            let mut s = json!({"type": types("integer")});
            for (k, v) in [("minimum", min), ("maximum", max), ("default", default)] {
                if let Some(v) = v {
                    s[k] = json!(v);
                }
            }
            s
        }
        ParamKind::Enum { options, default } => {
            // Empty (or null) takes the default.
            let mut values: Vec<Value> = options.iter().map(|o| json!(o)).collect();
            if !must {
                values.extend([json!(""), Value::Null]);
            }
            let mut s = json!({"type": types("string"), "enum": values});
            if let Some(d) = default {
                s["default"] = json!(d);
            }
            s
        }
        ParamKind::String { default, max_len } => {
            let mut s = json!({
                "type": types("string"),
                "maxLength": max_len,
                "pattern": if must { ONE_LINE_NOT_BLANK } else { ONE_LINE },
            });
            if let Some(d) = default {
                s["default"] = json!(d);
            }
            s
        }
        ParamKind::Text { max_len } => {
            let mut s = json!({"type": types("string"), "maxLength": max_len});
            if must {
                s["minLength"] = json!(1);
            }
            s
        }
    };
    let mut about = spec.label.clone();
    if let Some(help) = &spec.help {
        about = format!("{about}: {help}");
    }
    if let Some((_, _, format, meaning)) = FORMATS
        .iter()
        .find(|(k, name, _, _)| *k == kind && *name == spec.name)
    {
        s["format"] = json!(format);
        let meaning = if meaning.is_empty() {
            FORMATS
                .iter()
                .find(|(_, _, f, m)| f == format && !m.is_empty())
                .map_or("", |(_, _, _, m)| m)
        } else {
            meaning
        };
        about = format!("{about} ({meaning})");
    } else if kind == ProviderKind::Hosted && HOSTED_CERTIFICATES.contains(&spec.name.as_str()) {
        // Checked to hold a certificate.
        s["pattern"] = json!(CERTIFICATE);
        about = format!("{about} (PEM, holding a certificate)");
    } else if let Some((_, _, pattern, meaning)) = NAMES
        .iter()
        .find(|(k, name, _, _)| *k == kind && *name == spec.name)
    {
        s["pattern"] = json!(pattern);
        let meaning = if meaning.is_empty() {
            NAMES
                .iter()
                .find(|(_, _, p, m)| p == pattern && !m.is_empty())
                .map_or("", |(_, _, _, m)| m)
        } else {
            meaning
        };
        about = format!("{about} ({meaning})");
    }
    if spec.secret {
        s["writeOnly"] = json!(true);
        about = format!("{about}. Secret: kept in the vault, never returned");
    }
    s["description"] = json!(about);
    s
}
