//! Reads one cluster's inventory through its Kubernetes API: paginated lists of nodes,
//! namespaces, pods and their controllers, node usage from metrics.k8s.io when served, and
//! the API server's version.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ListParams};
use kube::Client;
use serde::de::DeserializeOwned;

use super::quantity;
use super::{
    ContainerInfo, ImageRef, NodeInfo, PodInfo, PodPhase, Resources, Snapshot, Workload,
    WorkloadKind, WorkloadState,
};

/// Objects per list page: bounded memory per request on big clusters.
const PAGE: u32 = 500;

/// Why a cluster's inventory could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct CollectError {
    /// What was being read (`list pods`, `version`).
    pub what: String,
    pub reason: String,
}

impl CollectError {
    fn new(what: &str, e: &kube::Error) -> Self {
        let reason = match e {
            kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
            other => other.to_string(),
        };
        Self {
            what: what.to_owned(),
            reason,
        }
    }
}

/// Reads everything. Callers bound the time (the client also has its own read timeout).
pub async fn collect(client: &Client) -> Result<Snapshot, CollectError> {
    let version = client
        .apiserver_version()
        .await
        .map_err(|e| CollectError::new("version", &e))?;
    let nodes: Vec<Node> = list_all(client, "nodes").await?;
    let namespaces: Vec<Namespace> = list_all(client, "namespaces").await?;
    let pods: Vec<Pod> = list_all(client, "pods").await?;
    let replica_sets: Vec<ReplicaSet> = list_all(client, "replicasets").await?;
    let deployments: Vec<Deployment> = list_all(client, "deployments").await?;
    let stateful_sets: Vec<StatefulSet> = list_all(client, "statefulsets").await?;
    let daemon_sets: Vec<DaemonSet> = list_all(client, "daemonsets").await?;
    let jobs: Vec<Job> = list_all(client, "jobs").await?;
    let usage = node_usage(client).await;

    let mut snapshot = Snapshot {
        api_version: version.git_version,
        namespaces: namespaces
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
        metrics: !usage.is_empty(),
        ..Snapshot::default()
    };
    let rs_owner: HashMap<(String, String), String> = replica_sets
        .iter()
        .filter_map(|rs| {
            let owner = controller(&rs.metadata.owner_references)?;
            (owner.0 == "Deployment").then(|| {
                (
                    (namespace_of(&rs.metadata), name_of(&rs.metadata)),
                    owner.1.clone(),
                )
            })
        })
        .collect();
    snapshot.pods = pods.iter().map(|p| pod_info(p, &rs_owner)).collect();
    snapshot.workloads = workloads(
        &deployments,
        &stateful_sets,
        &daemon_sets,
        &jobs,
        &snapshot.pods,
    );
    snapshot.nodes = nodes
        .iter()
        .map(|n| node_info(n, &snapshot.pods, usage.get(&name_of(&n.metadata)).copied()))
        .collect();
    snapshot.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    snapshot.namespaces.sort();
    Ok(snapshot)
}

/// Every object of a kind in the cluster (all namespaces), page by page.
async fn list_all<K>(client: &Client, plural: &str) -> Result<Vec<K>, CollectError>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api = Api::<K>::all(client.clone());
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(PAGE);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api
            .list(&params)
            .await
            .map_err(|e| CollectError::new(&format!("list {plural}"), &e))?;
        out.extend(page.items);
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
}

/// Node name → usage, from metrics.k8s.io; empty when the cluster does not serve it.
async fn node_usage(client: &Client) -> HashMap<String, Resources> {
    let request = http::Request::get("/apis/metrics.k8s.io/v1beta1/nodes").body(Vec::new());
    let Ok(request) = request else {
        return HashMap::new();
    };
    let Ok(list) = client.request::<serde_json::Value>(request).await else {
        return HashMap::new();
    };
    let mut usage = HashMap::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let name = item["metadata"]["name"].as_str();
        let cpu = item["usage"]["cpu"].as_str().and_then(quantity::cpu_millis);
        let memory = item["usage"]["memory"].as_str().and_then(quantity::bytes);
        if let (Some(name), Some(cpu_millis), Some(memory_bytes)) = (name, cpu, memory) {
            usage.insert(
                name.to_owned(),
                Resources {
                    cpu_millis,
                    memory_bytes,
                },
            );
        }
    }
    usage
}

fn name_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    m.name.clone().unwrap_or_default()
}

fn namespace_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    m.namespace.clone().unwrap_or_default()
}

/// (kind, name) of the controlling owner.
fn controller(
    owners: &Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>,
) -> Option<(String, String)> {
    owners
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.clone(), o.name.clone()))
}

pub(crate) fn resources(map: Option<&BTreeMap<String, Quantity>>) -> Resources {
    let get = |key: &str, parse: fn(&str) -> Option<u64>| {
        map.and_then(|m| m.get(key))
            .and_then(|q| parse(&q.0))
            .map_or(0, |v| v.min(super::MAX_QUANTITY))
    };
    Resources {
        cpu_millis: get("cpu", quantity::cpu_millis),
        memory_bytes: get("memory", quantity::bytes),
    }
}

/// The pod's effective requests or limits: the larger of the sum over its containers and
/// the biggest init container (they run one at a time, before the others), plus overhead.
pub(crate) fn effective(spec: &k8s_openapi::api::core::v1::PodSpec, limits: bool) -> Resources {
    let of = |c: &Container| {
        let r = c.resources.as_ref();
        resources(if limits {
            r.and_then(|r| r.limits.as_ref())
        } else {
            r.and_then(|r| r.requests.as_ref())
        })
    };
    let mut sum = Resources::default();
    for c in &spec.containers {
        sum.add(of(c));
    }
    for c in spec.init_containers.iter().flatten() {
        let r = of(c);
        sum.cpu_millis = sum.cpu_millis.max(r.cpu_millis);
        sum.memory_bytes = sum.memory_bytes.max(r.memory_bytes);
    }
    sum.add(resources(spec.overhead.as_ref()));
    sum
}

fn pod_info(pod: &Pod, rs_owner: &HashMap<(String, String), String>) -> PodInfo {
    let namespace = namespace_of(&pod.metadata);
    let name = name_of(&pod.metadata);
    let status = pod.status.as_ref();
    let phase = PodPhase::from_status(status.and_then(|s| s.phase.as_deref()).unwrap_or(""));
    let (workload_kind, workload_name) = match controller(&pod.metadata.owner_references) {
        Some((kind, owner)) => match kind.as_str() {
            "ReplicaSet" => match rs_owner.get(&(namespace.clone(), owner)) {
                Some(d) => (WorkloadKind::Deployment, d.clone()),
                None => (WorkloadKind::Pod, name.clone()),
            },
            "StatefulSet" => (WorkloadKind::StatefulSet, owner),
            "DaemonSet" => (WorkloadKind::DaemonSet, owner),
            "Job" => (WorkloadKind::Job, owner),
            _ => (WorkloadKind::Pod, name.clone()),
        },
        None => (WorkloadKind::Pod, name.clone()),
    };
    let statuses: Vec<&k8s_openapi::api::core::v1::ContainerStatus> = status
        .into_iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .collect();
    let restarts = statuses
        .iter()
        .map(|s| u32::try_from(s.restart_count).unwrap_or(0))
        .fold(0u32, u32::saturating_add);
    let spec = pod.spec.as_ref();
    let container = |c: &Container, init: bool| {
        let spec_image = c.image.clone().unwrap_or_default();
        let mut image = ImageRef::parse(&spec_image);
        if let Some(image) = image.as_mut().filter(|i| i.digest.is_none()) {
            image.digest = statuses
                .iter()
                .find(|s| s.name == c.name)
                .and_then(|s| ImageRef::digest_of_image_id(&s.image_id));
        }
        ContainerInfo {
            name: c.name.clone(),
            image_spec: spec_image,
            image,
            privileged: c
                .security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false),
            init,
        }
    };
    let containers = spec
        .into_iter()
        .flat_map(|s| {
            s.init_containers
                .iter()
                .flatten()
                .map(|c| container(c, true))
                .chain(s.containers.iter().map(|c| container(c, false)))
        })
        .collect();
    PodInfo {
        namespace,
        name,
        phase,
        node: spec.and_then(|s| s.node_name.clone()),
        restarts,
        workload_kind,
        workload_name,
        requests: spec.map(|s| effective(s, false)).unwrap_or_default(),
        limits: spec.map(|s| effective(s, true)).unwrap_or_default(),
        host_path: spec
            .and_then(|s| s.volumes.as_ref())
            .is_some_and(|v| v.iter().any(|v| v.host_path.is_some())),
        containers,
    }
}

fn replicas_state(desired: u32, ready: u32) -> WorkloadState {
    if desired == 0 {
        WorkloadState::Idle
    } else if ready >= desired {
        WorkloadState::Ready
    } else {
        WorkloadState::Progressing
    }
}

fn count(v: Option<i32>) -> u32 {
    v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
}

fn workloads(
    deployments: &[Deployment],
    stateful_sets: &[StatefulSet],
    daemon_sets: &[DaemonSet],
    jobs: &[Job],
    pods: &[PodInfo],
) -> Vec<Workload> {
    let mut out = Vec::new();
    let mut push = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                    kind: WorkloadKind,
                    desired: u32,
                    ready: u32,
                    state: WorkloadState| {
        out.push(Workload {
            namespace: namespace_of(meta),
            kind,
            name: name_of(meta),
            desired,
            ready,
            state,
        });
    };
    for d in deployments {
        let desired = count(d.spec.as_ref().and_then(|s| s.replicas).or(Some(1)));
        let status = d.status.as_ref();
        let ready = count(status.and_then(|s| s.ready_replicas));
        let stuck = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Progressing" && c.status == "False");
        let state = if stuck && ready < desired {
            WorkloadState::Failed
        } else {
            replicas_state(desired, ready)
        };
        push(&d.metadata, WorkloadKind::Deployment, desired, ready, state);
    }
    for s in stateful_sets {
        let desired = count(s.spec.as_ref().and_then(|s| s.replicas).or(Some(1)));
        let ready = count(s.status.as_ref().and_then(|s| s.ready_replicas));
        let state = replicas_state(desired, ready);
        push(
            &s.metadata,
            WorkloadKind::StatefulSet,
            desired,
            ready,
            state,
        );
    }
    for d in daemon_sets {
        let status = d.status.as_ref();
        let desired = count(status.map(|s| s.desired_number_scheduled));
        let ready = count(status.map(|s| s.number_ready));
        let state = replicas_state(desired, ready);
        push(&d.metadata, WorkloadKind::DaemonSet, desired, ready, state);
    }
    for j in jobs {
        let desired = count(j.spec.as_ref().and_then(|s| s.completions).or(Some(1)));
        let status = j.status.as_ref();
        let ready = count(status.and_then(|s| s.succeeded));
        let condition = |t: &str| {
            status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == t && c.status == "True")
        };
        let state = if condition("Failed") {
            WorkloadState::Failed
        } else if condition("Complete") {
            WorkloadState::Ready
        } else {
            WorkloadState::Progressing
        };
        push(&j.metadata, WorkloadKind::Job, desired, ready, state);
    }
    for p in pods.iter().filter(|p| p.workload_kind == WorkloadKind::Pod) {
        let (ready, state) = match p.phase {
            PodPhase::Running => (1, WorkloadState::Ready),
            PodPhase::Succeeded => (0, WorkloadState::Idle),
            PodPhase::Failed => (0, WorkloadState::Failed),
            PodPhase::Pending | PodPhase::Unknown => (0, WorkloadState::Progressing),
        };
        out.push(Workload {
            namespace: p.namespace.clone(),
            kind: WorkloadKind::Pod,
            name: p.name.clone(),
            desired: 1,
            ready,
            state,
        });
    }
    out.sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    out
}

fn node_info(node: &Node, pods: &[PodInfo], used: Option<Resources>) -> NodeInfo {
    let name = name_of(&node.metadata);
    let status = node.status.as_ref();
    let info = status.and_then(|s| s.node_info.as_ref());
    let mut ready = false;
    let mut problems = Vec::new();
    let mut since = None;
    for c in status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
    {
        if c.type_ == "Ready" {
            since = c
                .last_transition_time
                .as_ref()
                .and_then(crate::kubernetes::utc);
        }
        match (c.type_.as_str(), c.status.as_str()) {
            ("Ready", "True") => ready = true,
            ("Ready", "Unknown") => problems.push("Ready unknown (node not reporting)".to_owned()),
            ("Ready", _) => problems.push("NotReady".to_owned()),
            (t, "True") => problems.push(t.to_owned()),
            _ => {}
        }
    }
    if !ready && problems.is_empty() {
        problems.push("no Ready condition".to_owned());
    }
    let mut requested = Resources::default();
    let mut count = 0u32;
    for p in pods
        .iter()
        .filter(|p| p.phase.is_active() && p.node.as_deref() == Some(name.as_str()))
    {
        requested.add(p.requests);
        count = count.saturating_add(1);
    }
    NodeInfo {
        not_ready_since: since.filter(|_| !ready),
        ready,
        problems,
        kubelet_version: info.map(|i| i.kubelet_version.clone()).unwrap_or_default(),
        container_runtime: info
            .map(|i| i.container_runtime_version.clone())
            .unwrap_or_default(),
        os_image: info.map(|i| i.os_image.clone()).unwrap_or_default(),
        kernel_version: info.map(|i| i.kernel_version.clone()).unwrap_or_default(),
        architecture: info.map(|i| i.architecture.clone()).unwrap_or_default(),
        capacity: resources(status.and_then(|s| s.capacity.as_ref())),
        allocatable: resources(status.and_then(|s| s.allocatable.as_ref())),
        requested,
        used,
        pods: count,
        name,
    }
}
