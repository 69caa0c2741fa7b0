//! How an addon is doing in a cluster, asked of the cluster: its health rule (workloads
//! available, APIServices Available), drift (a server-side dry run of its manifests finds
//! objects changed or removed behind KQueen's back), and whether someone else installed it
//! (its well-known objects without KQueen's label).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use serde::{Deserialize, Serialize};

use super::AddonDefinition;
use crate::workloads::apply::{dry_run, Change};
use crate::workloads::refs::ADDON_LABEL;
use crate::workloads::resolve::{resolve, Placement};
use crate::workloads::status::{
    daemon_set_status, deployment_status, stateful_set_status, Rollout,
};
use crate::workloads::{api_error, WorkloadError};

/// An addon's state in one cluster, as the portal shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AddonState {
    NotInstalled,
    /// Being applied, or applied and its workloads still starting.
    Installing,
    Healthy,
    /// Installed, but its health rule fails (the reason says which part).
    Degraded,
    /// Objects KQueen applied were changed or removed by someone else.
    Drifted,
    Removing,
    /// The last install, upgrade or removal failed (the reason says why).
    Failed,
    /// Found by its well-known objects, installed by someone else: KQueen leaves it alone.
    PresentUnmanaged,
    /// The cluster could not be asked.
    Unknown,
}

impl AddonState {
    pub fn label(self) -> &'static str {
        match self {
            AddonState::NotInstalled => "Not installed",
            AddonState::Installing => "Installing",
            AddonState::Healthy => "Healthy",
            AddonState::Degraded => "Degraded",
            AddonState::Drifted => "Drifted",
            AddonState::Removing => "Removing",
            AddonState::Failed => "Failed",
            AddonState::PresentUnmanaged => "Present, unmanaged",
            AddonState::Unknown => "Unknown",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AddonState::NotInstalled => "not_installed",
            AddonState::Installing => "installing",
            AddonState::Healthy => "healthy",
            AddonState::Degraded => "degraded",
            AddonState::Drifted => "drifted",
            AddonState::Removing => "removing",
            AddonState::Failed => "failed",
            AddonState::PresentUnmanaged => "present_unmanaged",
            AddonState::Unknown => "unknown",
        }
    }
}

/// Why the health rule fails, or None when it holds.
pub async fn unhealthy(
    client: &kube::Client,
    def: &AddonDefinition,
) -> Result<Option<String>, WorkloadError> {
    let mut why = Vec::new();
    for w in &def.health.workloads {
        let status = match w.kind.as_str() {
            "DaemonSet" => Api::<DaemonSet>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|d| daemon_set_status(&d))),
            "StatefulSet" => Api::<StatefulSet>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|s| stateful_set_status(&s))),
            _ => Api::<Deployment>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|d| deployment_status(&d))),
        }
        .map_err(|e| api_error(e, &format!("read {} {}/{}", w.kind, w.namespace, w.name)))?;
        match status {
            None => why.push(format!("{} {}/{} is missing", w.kind, w.namespace, w.name)),
            Some(s) if s.rollout != Rollout::Available => why.push(format!(
                "{} {}/{}: {}/{} available{}",
                w.kind,
                w.namespace,
                w.name,
                s.available,
                s.desired,
                s.reason.map(|r| format!(" ({r})")).unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
    let services = ApiResource {
        group: "apiregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiregistration.k8s.io/v1".into(),
        kind: "APIService".into(),
        plural: "apiservices".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &services);
    for name in &def.health.api_services {
        let found = api
            .get_opt(name)
            .await
            .map_err(|e| api_error(e, &format!("read APIService {name}")))?;
        let Some(found) = found else {
            why.push(format!("APIService {name} is missing"));
            continue;
        };
        let available = found.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Available");
        match available {
            Some(c) if c["status"] == "True" => {}
            Some(c) => why.push(format!(
                "APIService {name} is not available: {}",
                c["message"]
                    .as_str()
                    .or(c["reason"].as_str())
                    .unwrap_or("no reason given")
            )),
            None => why.push(format!("APIService {name} is not available yet")),
        }
    }
    Ok(if why.is_empty() {
        None
    } else {
        Some(why.join("; "))
    })
}

/// The objects of the installed addon that differ from its manifests (changed fields or
/// gone), each in words; empty when none drifted.
pub async fn drifted(
    client: &kube::Client,
    def: &AddonDefinition,
    params: &BTreeMap<String, String>,
    cluster_name: &str,
) -> Result<Vec<String>, WorkloadError> {
    let objects = def.render(params).map_err(WorkloadError::Invalid)?;
    let set = def.apply_set();
    let resolved = resolve(client, &objects, &placement(def, cluster_name), &set).await?;
    let diffs = dry_run(client, &set, &resolved, &[], true).await?;
    Ok(diffs
        .into_iter()
        .filter_map(|d| match d.change {
            Change::Created => Some(Ok(format!("{} is missing", d.object))),
            Change::Changed { fields } => {
                // Only what KQueen sets counts: fields others add (a controller's, an
                // annotation) are theirs.
                let ours = resolved
                    .iter()
                    .find(|r| r.target.same_object(&d.object))
                    .map(|r| paths_of(&r.body))
                    .unwrap_or_default();
                let fields: Vec<_> = fields
                    .into_iter()
                    .filter(|f| ours.contains(&f.path))
                    .collect();
                (!fields.is_empty()).then_some(Err((d.object, fields)))
            }
            Change::Unchanged | Change::Pruned => None,
        })
        .map(|x| match x {
            Ok(line) => line,
            Err((object, fields)) => format!(
                "{}: {}",
                object,
                fields
                    .iter()
                    .take(3)
                    .map(|f| format!(
                        "{} {} → {}",
                        f.path,
                        f.before.as_deref().unwrap_or("(none)"),
                        f.after.as_deref().unwrap_or("(none)")
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect())
}

/// Every path of `v` (objects' keys and list indexes, as the diff writes them).
fn paths_of(v: &serde_json::Value) -> std::collections::HashSet<String> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut std::collections::HashSet<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(p.clone());
                    walk(&p, child, out);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    let p = format!("{prefix}[{i}]");
                    out.insert(p.clone());
                    walk(&p, child, out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::HashSet::new();
    walk("", v, &mut out);
    out
}

/// Whether the addon runs without KQueen: one of its well-known objects exists and does not
/// carry KQueen's addon label.
pub async fn present_unmanaged(
    client: &kube::Client,
    def: &AddonDefinition,
) -> Result<bool, WorkloadError> {
    for w in &def.detect {
        let labels = match w.kind.as_str() {
            "DaemonSet" => Api::<DaemonSet>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|x| x.metadata.labels.unwrap_or_default())),
            "StatefulSet" => Api::<StatefulSet>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|x| x.metadata.labels.unwrap_or_default())),
            _ => Api::<Deployment>::namespaced(client.clone(), &w.namespace)
                .get_opt(&w.name)
                .await
                .map(|o| o.map(|x| x.metadata.labels.unwrap_or_default())),
        }
        .map_err(|e| api_error(e, &format!("read {} {}/{}", w.kind, w.namespace, w.name)))?;
        if labels.is_some_and(|l| !l.contains_key(ADDON_LABEL)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Where an addon's objects go: its namespace by default, any namespace it names, and
/// cluster-scoped objects allowed (operators vetted the definition).
pub fn placement(def: &AddonDefinition, cluster_name: &str) -> Placement {
    Placement {
        namespace: def.namespace.clone(),
        other_namespaces: true,
        cluster_scoped: true,
        cluster_name: cluster_name.to_owned(),
    }
}
