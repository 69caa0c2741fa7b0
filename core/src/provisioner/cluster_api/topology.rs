//! The `Cluster` object KQueen writes: a managed topology (`spec.topology`) built from the
//! request's parameters, in the shape of the API version the management cluster serves —
//! v1beta1 names the class with `class`/`classNamespace`, v1beta2 with `classRef`.

use serde_json::{json, Map, Value};

use super::settings::{self as s, setting};
use crate::provisioner::{OpContext, Params};
use crate::ValidationError;

/// The API versions of `cluster.x-k8s.io` KQueen speaks, newest first.
pub(super) const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
pub(super) const GROUP: &str = "cluster.x-k8s.io";
/// The owner labels of the Cluster objects KQueen writes or adopts.
pub(super) const CLUSTER_LABEL: &str = "kqueen.io/cluster";
pub(super) const TENANT_LABEL: &str = "kqueen.io/tenant";
/// The name of the first worker pool (the one a scale changes) in clusters KQueen creates.
pub(super) const FIRST_POOL: &str = "md-0";

/// One worker pool of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pool {
    pub class: String,
    pub name: String,
    pub replicas: u32,
    pub flavor: Option<String>,
}

/// A request's parameters, checked: what the topology is built from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shape {
    pub version: String,
    /// Control plane machines; 0: not written (a managed control plane: EKS, AKS, GKE).
    pub control_plane: u32,
    pub pools: Vec<Pool>,
    pub region: Option<String>,
    pub variables: Map<String, Value>,
}

/// Kubernetes versions as Cluster API writes them: `v1.31.2` (a leading `v` is added).
pub(super) fn version(raw: &str) -> Result<String, String> {
    let bare = raw.trim().trim_start_matches('v');
    let numeric = |p: &&str| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit());
    let (core, _) = bare.split_once(['-', '+']).unwrap_or((bare, ""));
    let core_parts: Vec<&str> = core.split('.').collect();
    if core_parts.len() != 3 || !core_parts.iter().all(numeric) {
        return Err(format!(
            "'{}' is not a Kubernetes version like v1.31.2",
            raw.trim()
        ));
    }
    Ok(format!("v{bare}"))
}

fn count(params: &Params, name: &'static str, default: u32) -> Result<u32, ValidationError> {
    match params.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| ValidationError::at("parameters", name, "must be a whole number")),
    }
}

fn wrong(name: &'static str, message: impl Into<String>) -> ValidationError {
    ValidationError::at("parameters", name, message.into())
}

/// Checks a request's parameters against the provider's settings and builds the shape.
pub(super) fn shape(params: &Params, config: &Params) -> Result<Shape, ValidationError> {
    let raw_version = params.get(s::VERSION).map(String::as_str).unwrap_or("");
    let version = version(raw_version).map_err(|m| wrong(s::VERSION, m))?;
    let control_plane = count(params, s::CONTROL_PLANE, 1)?;
    if control_plane % 2 == 0 && control_plane != 0 {
        return Err(wrong(
            s::CONTROL_PLANE,
            "must be odd (1, 3, 5 or 7): etcd needs a majority; 0 for a managed control plane",
        ));
    }
    let flavor_variable = setting(config, s::FLAVOR_VARIABLE);
    let flavor = |text: Option<&str>, field: &'static str| match text {
        Some(f) if flavor_variable.is_none() => Err(wrong(
            field,
            format!("'{f}': this provider offers no choice of machine flavor"),
        )),
        f => Ok(f.map(str::to_owned)),
    };
    let first_class = setting(params, s::WORKER_CLASS).unwrap_or("default-worker");
    if !s::is_label(first_class) {
        return Err(wrong(
            s::WORKER_CLASS,
            "must be a worker class name of the ClusterClass",
        ));
    }
    let mut pools = vec![Pool {
        class: first_class.to_owned(),
        name: FIRST_POOL.into(),
        replicas: count(params, s::NODES, 1)?,
        flavor: flavor(setting(params, s::FLAVOR), s::FLAVOR)?,
    }];
    for (i, line) in params
        .get(s::EXTRA_WORKERS)
        .map(String::as_str)
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .enumerate()
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = |m: &str| wrong(s::EXTRA_WORKERS, format!("line '{line}': {m}"));
        let (class, replicas, flavor_text) = match fields.as_slice() {
            [c, r] => (*c, *r, None),
            [c, r, f] => (*c, *r, Some(*f)),
            _ => return Err(at("write <worker class> <machines> [<machine flavor>]")),
        };
        if !s::is_label(class) {
            return Err(at("the worker class must be a name of the ClusterClass"));
        }
        let replicas = replicas
            .parse::<u32>()
            .ok()
            .filter(|r| *r <= 200)
            .ok_or_else(|| at("the machines must be a whole number up to 200"))?;
        if pools.len() >= 10 {
            return Err(at("at most 10 worker pools"));
        }
        pools.push(Pool {
            class: class.to_owned(),
            name: format!("md-{}", i + 1),
            replicas,
            flavor: flavor(flavor_text, s::EXTRA_WORKERS)?,
        });
    }
    let region = setting(params, s::REGION).map(str::to_owned);
    if let (Some(r), None) = (&region, setting(config, s::REGION_VARIABLE)) {
        return Err(wrong(
            s::REGION,
            format!("'{r}': this provider offers no choice of region"),
        ));
    }
    let variables = match setting(params, s::VARIABLES) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(wrong(s::VARIABLES, "must be a JSON object of variables")),
            Err(e) => {
                return Err(wrong(
                    s::VARIABLES,
                    format!(
                        "is not valid JSON (line {}, column {})",
                        e.line(),
                        e.column()
                    ),
                ))
            }
        },
    };
    Ok(Shape {
        version,
        control_plane,
        pools,
        region,
        variables,
    })
}

/// The `Cluster` object for the request, to apply server-side.
pub(super) fn cluster_object(
    ctx: &OpContext,
    api_version: &str,
    namespace: &str,
    name: &str,
    shape: &Shape,
) -> Value {
    let config = &ctx.provider_config;
    let class = setting(config, s::CLUSTER_CLASS).unwrap_or_default();
    let class_namespace = setting(config, s::CLASS_NAMESPACE);
    let mut variables: Vec<Value> = Vec::new();
    if let (Some(var), Some(region)) = (setting(config, s::REGION_VARIABLE), &shape.region) {
        variables.push(json!({"name": var, "value": region}));
    }
    for (k, v) in &shape.variables {
        variables.push(json!({"name": k, "value": v}));
    }
    let flavor_variable = setting(config, s::FLAVOR_VARIABLE);
    let pools: Vec<Value> = shape
        .pools
        .iter()
        .map(|p| {
            let mut pool = json!({"class": p.class, "name": p.name, "replicas": p.replicas});
            if let (Some(var), Some(f)) = (flavor_variable, &p.flavor) {
                pool["variables"] = json!({"overrides": [{"name": var, "value": f}]});
            }
            pool
        })
        .collect();
    let list = if s::machine_pools(config) {
        "machinePools"
    } else {
        "machineDeployments"
    };
    let mut topology = json!({
        "version": shape.version,
        "workers": {list: pools},
    });
    if shape.control_plane > 0 {
        topology["controlPlane"] = json!({"replicas": shape.control_plane});
    }
    if api_version.ends_with("v1beta1") {
        topology["class"] = json!(class);
        if let Some(ns) = class_namespace {
            topology["classNamespace"] = json!(ns);
        }
    } else {
        let mut class_ref = json!({"name": class});
        if let Some(ns) = class_namespace {
            class_ref["namespace"] = json!(ns);
        }
        topology["classRef"] = class_ref;
    }
    if !variables.is_empty() {
        topology["variables"] = json!(variables);
    }
    let mut spec = json!({"topology": topology});
    for (setting_name, field) in [(s::POD_CIDR, "pods"), (s::SERVICE_CIDR, "services")] {
        if let Some(cidr) = setting(config, setting_name) {
            spec["clusterNetwork"][field] = json!({"cidrBlocks": [cidr]});
        }
    }
    json!({
        "apiVersion": api_version,
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": owner_labels(ctx),
        },
        "spec": spec,
    })
}

/// The labels that tie a Cluster object to its KQueen cluster.
pub(super) fn owner_labels(ctx: &OpContext) -> Map<String, Value> {
    let mut labels = Map::new();
    labels.insert(CLUSTER_LABEL.into(), json!(ctx.cluster_id.to_string()));
    labels.insert(TENANT_LABEL.into(), json!(ctx.tenant));
    labels.insert("app.kubernetes.io/managed-by".into(), json!("kqueen"));
    labels
}

/// The kinds of worker pool a topology has: MachineDeployments (machines KQueen can count)
/// and MachinePools (a cloud's scale set or node pool: AKS, GKE).
pub(super) const POOL_LISTS: [&str; 2] = ["machineDeployments", "machinePools"];

fn pool_list<'a>(object: &'a Value, list: &str) -> Option<&'a Vec<Value>> {
    object
        .pointer(&format!("/spec/topology/workers/{list}"))
        .and_then(Value::as_array)
}

/// The topology's worker pools of both kinds, as the object says: (name, replicas).
pub(super) fn pools_of(object: &Value) -> Vec<(String, u32)> {
    POOL_LISTS
        .iter()
        .filter_map(|list| pool_list(object, list))
        .flatten()
        .map(|p| {
            (
                p.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                p.get("replicas").and_then(Value::as_u64).unwrap_or(0) as u32,
            )
        })
        .collect()
}

/// Whether some workers are MachinePools (counted by Cluster API, not as Machines).
pub(super) fn has_machine_pools(object: &Value) -> bool {
    pool_list(object, "machinePools").is_some_and(|l| !l.is_empty())
}

/// The control plane machines the topology asks for; None when it leaves the number to
/// the ClusterClass or the control plane is a managed service (EKS, AKS, GKE).
pub(super) fn control_plane_replicas(object: &Value) -> Option<u32> {
    object
        .pointer("/spec/topology/controlPlane/replicas")
        .and_then(Value::as_u64)
        .map(|n| n as u32)
}

/// The workers the topology asks for, all pools.
pub(super) fn desired_workers(object: &Value) -> u32 {
    pools_of(object).iter().map(|(_, r)| r).sum()
}

/// The merge patch of a scale: the first worker pool's replicas (MachineDeployments first,
/// else MachinePools), the whole list written back (merge patches replace lists) under the
/// read object's resourceVersion, so a concurrent change is refused rather than
/// overwritten.
pub(super) fn scale_patch(object: &Value, nodes: u32) -> Option<Value> {
    let (list, mut pools) = POOL_LISTS.iter().find_map(|list| {
        pool_list(object, list)
            .filter(|l| !l.is_empty())
            .map(|l| (*list, l.clone()))
    })?;
    pools.first_mut()?["replicas"] = json!(nodes);
    Some(json!({
        "metadata": {"resourceVersion": object.pointer("/metadata/resourceVersion")},
        "spec": {"topology": {"workers": {list: pools}}},
    }))
}

/// The topology's Kubernetes version.
pub(super) fn version_of(object: &Value) -> Option<&str> {
    object
        .pointer("/spec/topology/version")
        .and_then(Value::as_str)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn config() -> Params {
        params(&[
            (s::CLUSTER_CLASS, "quick-start"),
            (s::REGION_VARIABLE, "region"),
            (s::FLAVOR_VARIABLE, "workerMachineType"),
        ])
    }

    #[test]
    fn versions_get_their_v() {
        assert_eq!(version("1.31.2").unwrap(), "v1.31.2");
        assert_eq!(version("v1.30.0-eks.1").unwrap(), "v1.30.0-eks.1");
        assert!(version("1.31").is_err());
        assert!(version("latest").is_err());
    }

    #[test]
    fn the_topology_follows_the_parameters_in_both_versions() {
        let p = params(&[
            (s::VERSION, "1.31.2"),
            (s::CONTROL_PLANE, "3"),
            (s::NODES, "2"),
            (s::FLAVOR, "m6i.large"),
            (s::REGION, "eu-west-1"),
            (s::EXTRA_WORKERS, "gpu-worker 1 g5.xlarge\n# spare\nspot 0"),
            (s::VARIABLES, r#"{"sshKeyName": "ops"}"#),
        ]);
        let shape = shape(&p, &config()).unwrap();
        let mut ctx = OpContext::new("dev", "team-a", "/tmp".into());
        ctx.provider_config = config();
        let v2 = cluster_object(
            &ctx,
            "cluster.x-k8s.io/v1beta2",
            "default",
            "team-a-dev",
            &shape,
        );
        let t = &v2["spec"]["topology"];
        assert_eq!(t["classRef"], json!({"name": "quick-start"}));
        assert_eq!(t["version"], "v1.31.2");
        assert_eq!(t["controlPlane"]["replicas"], 3);
        let pools = t["workers"]["machineDeployments"].as_array().unwrap();
        assert_eq!(pools.len(), 3);
        assert_eq!(pools[0]["class"], "default-worker");
        assert_eq!(pools[0]["replicas"], 2);
        assert_eq!(
            pools[0]["variables"]["overrides"][0],
            json!({"name": "workerMachineType", "value": "m6i.large"})
        );
        assert_eq!(pools[1]["name"], "md-1");
        assert_eq!(pools[1]["class"], "gpu-worker");
        assert!(pools[2].get("variables").is_none());
        assert_eq!(
            t["variables"],
            json!([{"name": "region", "value": "eu-west-1"}, {"name": "sshKeyName", "value": "ops"}])
        );
        assert_eq!(v2["metadata"]["labels"][TENANT_LABEL], "team-a");
        assert_eq!(control_plane_replicas(&v2), Some(3));
        assert_eq!(desired_workers(&v2), 2 + 1);
        let v1 = cluster_object(
            &ctx,
            "cluster.x-k8s.io/v1beta1",
            "default",
            "team-a-dev",
            &shape,
        );
        assert_eq!(v1["spec"]["topology"]["class"], "quick-start");
        assert!(v1["spec"].get("clusterNetwork").is_none());
        ctx.provider_config
            .insert(s::POD_CIDR.into(), "192.168.0.0/16".into());
        let networked = cluster_object(&ctx, "cluster.x-k8s.io/v1beta2", "d", "n", &shape);
        assert_eq!(
            networked["spec"]["clusterNetwork"],
            json!({"pods": {"cidrBlocks": ["192.168.0.0/16"]}})
        );
        assert!(v1["spec"]["topology"].get("classRef").is_none());
    }

    #[test]
    fn wrong_parameters_name_their_field() {
        let field = |pairs: &[(&str, &str)], config: &Params| {
            shape(&params(pairs), config).unwrap_err().key.unwrap()
        };
        let bare = params(&[(s::CLUSTER_CLASS, "q")]);
        assert_eq!(field(&[(s::VERSION, "x")], &config()), s::VERSION);
        assert_eq!(
            field(
                &[(s::VERSION, "1.30.1"), (s::CONTROL_PLANE, "2")],
                &config()
            ),
            s::CONTROL_PLANE
        );
        assert_eq!(
            field(&[(s::VERSION, "1.30.1"), (s::FLAVOR, "big")], &bare),
            s::FLAVOR
        );
        assert_eq!(
            field(&[(s::VERSION, "1.30.1"), (s::REGION, "mars")], &bare),
            s::REGION
        );
        assert_eq!(
            field(
                &[(s::VERSION, "1.30.1"), (s::EXTRA_WORKERS, "gpu many")],
                &config()
            ),
            s::EXTRA_WORKERS
        );
        assert_eq!(
            field(&[(s::VERSION, "1.30.1"), (s::VARIABLES, "[1]")], &config()),
            s::VARIABLES
        );
    }

    #[test]
    fn a_scale_changes_the_first_pool_only() {
        let object = json!({
            "metadata": {"resourceVersion": "7"},
            "spec": {"topology": {"controlPlane": {"replicas": 1}, "workers": {"machineDeployments": [
                {"class": "a", "name": "md-0", "replicas": 1},
                {"class": "b", "name": "md-1", "replicas": 4},
            ]}}}
        });
        let patch = scale_patch(&object, 5).unwrap();
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
        let pools = &patch["spec"]["topology"]["workers"]["machineDeployments"];
        assert_eq!(pools[0]["replicas"], 5);
        assert_eq!(pools[1]["replicas"], 4);
        assert!(scale_patch(&json!({"spec": {"topology": {}}}), 1).is_none());
        let pools_only = json!({"spec": {"topology": {"workers": {
            "machineDeployments": [],
            "machinePools": [{"class": "default-system", "name": "mp-0", "replicas": 1}],
        }}}});
        let patch = scale_patch(&pools_only, 3).unwrap();
        assert_eq!(
            patch["spec"]["topology"]["workers"]["machinePools"][0]["replicas"],
            3
        );
        assert!(has_machine_pools(&pools_only));
        assert_eq!(control_plane_replicas(&pools_only), None);
    }

    #[test]
    fn managed_control_planes_and_machine_pools() {
        let mut config = config();
        config.insert(s::WORKER_POOLS.into(), "machine-pools".into());
        let p = params(&[(s::VERSION, "1.31.2"), (s::CONTROL_PLANE, "0")]);
        let shape = shape(&p, &config).unwrap();
        let mut ctx = OpContext::new("dev", "team-a", "/tmp".into());
        ctx.provider_config = config;
        let object = cluster_object(&ctx, "cluster.x-k8s.io/v1beta2", "d", "n", &shape);
        let t = &object["spec"]["topology"];
        assert!(t.get("controlPlane").is_none(), "{t}");
        assert_eq!(t["workers"]["machinePools"][0]["name"], "md-0");
        assert!(t["workers"].get("machineDeployments").is_none());
    }
}
