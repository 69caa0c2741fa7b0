//! The CRDs, built as JSON: structural schemas as apiextensions.k8s.io/v1 wants them, with
//! the topology fields spelt out and everything else kept as it comes.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};

use super::{resource, Served, GROUP};

const MANAGER: &str = "kqueen-testkit";

/// Creates (or updates) the Cluster, ClusterClass and Machine CRDs serving `served`, and
/// waits until each is established and discovery lists every version (at most 30 s).
pub async fn install_crds(client: &kube::Client, served: Served) -> Result<(), String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(MANAGER).force();
    let crds = [
        crd("Cluster", served, cluster_spec),
        crd("ClusterClass", served, |_| open_object()),
        crd("Machine", served, |_| machine_spec()),
    ];
    for crd in &crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        api.patch(name, &params, &Patch::Apply(crd))
            .await
            .map_err(|e| format!("apply CRD {name}: {e}"))?;
    }
    let started = Instant::now();
    loop {
        let mut missing = Vec::new();
        for crd in &crds {
            let name = crd["metadata"]["name"].as_str().unwrap_or_default();
            let established = api.get(name).await.ok().is_some_and(|c| {
                c.status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
            if !established {
                missing.push(format!("{name} not established"));
            }
        }
        for version in served.versions() {
            let listed = client
                .list_api_group_resources(&format!("{GROUP}/{version}"))
                .await
                .map(|l| l.resources.into_iter().map(|r| r.name).collect::<Vec<_>>())
                .unwrap_or_default();
            for plural in ["clusters", "clusterclasses", "machines"] {
                if !listed.iter().any(|r| r == plural) {
                    missing.push(format!("{plural}.{GROUP}/{version} not discovered"));
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err(format!("CRDs not ready after 30 s: {}", missing.join(", ")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates (or updates) a plausible ClusterClass `name` in `namespace` at the newest served
/// version: a control plane, one worker class `default-worker`, variables `region` and
/// `flavor`.
pub async fn create_cluster_class(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    served: Served,
) -> Result<(), String> {
    let ar = served.resource("ClusterClass");
    let v2 = served == Served::Both;
    // v1beta1 names templates with `ref`, v1beta2 with `templateRef`.
    let template = |api_version: &str, kind: &str, suffix: &str| {
        let reference =
            json!({"apiVersion": api_version, "kind": kind, "name": format!("{name}-{suffix}")});
        if v2 {
            json!({"templateRef": reference})
        } else {
            json!({"ref": reference})
        }
    };
    let variable = |var: &str, required: bool, schema: Value| json!({"name": var, "required": required, "schema": {"openAPIV3Schema": schema}});
    let object = json!({
        "apiVersion": ar.api_version,
        "kind": "ClusterClass",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "controlPlane": template("controlplane.cluster.x-k8s.io/v1beta1", "KubeadmControlPlaneTemplate", "control-plane"),
            "infrastructure": template("infrastructure.cluster.x-k8s.io/v1beta1", "DockerClusterTemplate", "cluster"),
            "workers": {"machineDeployments": [{
                "class": "default-worker",
                "template": {
                    "bootstrap": template("bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfigTemplate", "default-worker"),
                    "infrastructure": template("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachineTemplate", "default-worker"),
                },
            }]},
            "variables": [
                variable("region", true, json!({"type": "string", "default": "eu-west-1"})),
                variable("flavor", false, json!({"type": "string", "enum": ["small", "medium", "large"], "default": "medium"})),
            ],
        },
    });
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &ar);
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("apply ClusterClass {namespace}/{name}: {e}"))
}

/// A CRD for `kind` serving `served`, the newest version stored, no conversion webhook
/// (the API server only rewrites `apiVersion`).
fn crd(kind: &str, served: Served, spec: fn(&str) -> Value) -> Value {
    let ar = resource(served.newest(), kind);
    let versions: Vec<Value> = served
        .versions()
        .iter()
        .map(|&version| {
            json!({
                "name": version,
                "served": true,
                "storage": version == served.newest(),
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec(version),
                        "status": open_object(),
                    },
                }},
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{GROUP}", ar.plural)},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": ar.plural,
                "singular": kind.to_ascii_lowercase(),
                "kind": kind,
                "listKind": format!("{kind}List"),
            },
            "conversion": {"strategy": "None"},
            "versions": versions,
        },
    })
}

/// An object whose fields are all kept.
fn open_object() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// An object with these properties, other fields kept.
fn open_with(properties: Value) -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": properties})
}

/// An object with exactly these properties (others are pruned, as upstream's CRDs do).
fn closed(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// `{name, value}` where value is any JSON.
fn variable() -> Value {
    closed(json!({
        "name": {"type": "string"},
        "value": {"x-kubernetes-preserve-unknown-fields": true},
    }))
}

fn cluster_spec(version: &str) -> Value {
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer"});
    let pools = json!({
        "type": "array",
        "items": open_with(json!({
            "class": string,
            "name": string,
            "replicas": integer,
            "variables": open_with(json!({"overrides": {"type": "array", "items": variable()}})),
        })),
    });
    let mut topology = json!({
        "version": string,
        "controlPlane": open_with(json!({"replicas": integer})),
        "workers": open_with(json!({"machineDeployments": pools, "machinePools": pools})),
        "variables": {"type": "array", "items": variable()},
    });
    if version == "v1beta1" {
        topology["class"] = string.clone();
        topology["classNamespace"] = string.clone();
    } else {
        topology["classRef"] = open_with(json!({"name": string, "namespace": string}));
    }
    open_with(json!({
        "paused": {"type": "boolean"},
        "controlPlaneEndpoint": closed(json!({"host": string, "port": integer})),
        "topology": open_with(topology),
    }))
}

fn machine_spec() -> Value {
    let string = json!({"type": "string"});
    open_with(json!({
        "clusterName": string,
        "version": string,
        "bootstrap": open_with(json!({"dataSecretName": string})),
    }))
}
