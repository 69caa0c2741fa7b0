//! How the workloads of a set are doing: the rollout of each Deployment, StatefulSet and
//! DaemonSet (desired, updated, ready, available), the pods that fail and why, and the
//! warnings Kubernetes recorded in the namespace.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams};
use serde::{Deserialize, Serialize};

use super::errors::{api_error, WorkloadError};

/// Where a workload's rollout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rollout {
    /// Every replica runs the current spec and is available.
    Available,
    /// The controller is still rolling it out.
    Progressing,
    /// The controller gave up (progress deadline exceeded) or nothing is available.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadStatus {
    pub kind: String,
    pub name: String,
    pub desired: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub rollout: Rollout,
    /// Why it failed or is stuck (a condition's message), when known.
    pub reason: Option<String>,
}

/// A pod that is not running well, and why ("CrashLoopBackOff: back-off restarting…").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingPod {
    pub name: String,
    pub reason: String,
}

/// A warning event of the namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub object: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetStatus {
    pub workloads: Vec<WorkloadStatus>,
    pub failing_pods: Vec<FailingPod>,
    pub warnings: Vec<Warning>,
}

impl SetStatus {
    /// Every workload available (true when there is none).
    pub fn all_available(&self) -> bool {
        self.workloads
            .iter()
            .all(|w| w.rollout == Rollout::Available)
    }
}

/// The status of the workloads labelled `selector` in `namespace`, with the namespace's
/// failing pods and recent warnings (`pods_and_events` false: workloads only).
pub async fn set_status(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    pods_and_events: bool,
) -> Result<SetStatus, WorkloadError> {
    let lp = ListParams::default().labels(selector);
    let mut out = SetStatus::default();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for d in deployments
        .list(&lp)
        .await
        .map_err(|e| api_error(e, "list deployments"))?
    {
        out.workloads.push(deployment_status(&d));
    }
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    for s in sets
        .list(&lp)
        .await
        .map_err(|e| api_error(e, "list statefulsets"))?
    {
        out.workloads.push(stateful_set_status(&s));
    }
    let daemons: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    for d in daemons
        .list(&lp)
        .await
        .map_err(|e| api_error(e, "list daemonsets"))?
    {
        out.workloads.push(daemon_set_status(&d));
    }
    if pods_and_events {
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        for p in pods
            .list(&ListParams::default())
            .await
            .map_err(|e| api_error(e, "list pods"))?
        {
            if let Some(f) = failing_pod(&p) {
                out.failing_pods.push(f);
            }
        }
        let events: Api<Event> = Api::namespaced(client.clone(), namespace);
        let mut warnings: Vec<Event> = events
            .list(&ListParams::default().fields("type=Warning"))
            .await
            .map_err(|e| api_error(e, "list events"))?
            .items;
        warnings.sort_by_key(|e| std::cmp::Reverse(e.last_timestamp.clone().map(|t| t.0)));
        out.warnings = warnings
            .into_iter()
            .take(20)
            .map(|e| Warning {
                object: format!(
                    "{} {}",
                    e.involved_object.kind.unwrap_or_default(),
                    e.involved_object.name.unwrap_or_default()
                ),
                reason: e.reason.unwrap_or_default(),
                message: e.message.unwrap_or_default().chars().take(300).collect(),
                count: e.count.unwrap_or(1),
            })
            .collect();
    }
    out.workloads
        .sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    Ok(out)
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

/// A Deployment's rollout, read like `kubectl rollout status` does.
pub fn deployment_status(d: &Deployment) -> WorkloadStatus {
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let stuck = status.conditions.iter().flatten().find(|c| {
        c.type_ == "Progressing" && c.status == "False"
            || c.type_ == "ReplicaFailure" && c.status == "True"
    });
    let (rollout, reason) = if let Some(c) = stuck {
        (
            Rollout::Failed,
            Some(
                c.message
                    .clone()
                    .unwrap_or_else(|| c.reason.clone().unwrap_or_default()),
            ),
        )
    } else if observed && updated >= desired && available >= desired && total <= updated {
        (Rollout::Available, None)
    } else {
        (Rollout::Progressing, None)
    };
    WorkloadStatus {
        kind: "Deployment".into(),
        name: name_of(&d.metadata),
        desired,
        updated,
        ready: status.ready_replicas.unwrap_or(0),
        available,
        rollout,
        reason,
    }
}

pub fn stateful_set_status(s: &StatefulSet) -> WorkloadStatus {
    let desired = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = s.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0) >= s.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let ready = status.ready_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(ready);
    WorkloadStatus {
        kind: "StatefulSet".into(),
        name: name_of(&s.metadata),
        desired,
        updated,
        ready,
        available,
        rollout: if observed && ready >= desired && updated >= desired {
            Rollout::Available
        } else {
            Rollout::Progressing
        },
        reason: None,
    }
}

pub fn daemon_set_status(d: &DaemonSet) -> WorkloadStatus {
    let status = d.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let desired = status.desired_number_scheduled;
    let updated = status.updated_number_scheduled.unwrap_or(0);
    let available = status.number_available.unwrap_or(0);
    WorkloadStatus {
        kind: "DaemonSet".into(),
        name: name_of(&d.metadata),
        desired,
        updated,
        ready: status.number_ready,
        available,
        rollout: if observed && updated >= desired && available >= desired {
            Rollout::Available
        } else {
            Rollout::Progressing
        },
        reason: None,
    }
}

/// Why a pod fails, if it does: a container waiting for a bad reason (image pull, crash
/// loop, bad config), terminated with an error, or the pod failed or unschedulable.
pub fn failing_pod(p: &Pod) -> Option<FailingPod> {
    let name = name_of(&p.metadata);
    let status = p.status.as_ref()?;
    if status.phase.as_deref() == Some("Succeeded") {
        return None;
    }
    for c in status.container_statuses.iter().flatten() {
        if let Some(w) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_default();
            if reason != "ContainerCreating" && reason != "PodInitializing" && !reason.is_empty() {
                let message = w.message.clone().unwrap_or_default();
                return Some(FailingPod {
                    name,
                    reason: join(&reason, &message),
                });
            }
        }
        if let Some(t) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) {
            if t.exit_code != 0 {
                return Some(FailingPod {
                    name,
                    reason: join(
                        t.reason.as_deref().unwrap_or("Error"),
                        &format!("exit code {}", t.exit_code),
                    ),
                });
            }
        }
    }
    if status.phase.as_deref() == Some("Failed") {
        return Some(FailingPod {
            name,
            reason: join(
                status.reason.as_deref().unwrap_or("Failed"),
                status.message.as_deref().unwrap_or_default(),
            ),
        });
    }
    let unschedulable = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    unschedulable.map(|c| FailingPod {
        name,
        reason: join(
            c.reason.as_deref().unwrap_or("Unschedulable"),
            c.message.as_deref().unwrap_or_default(),
        ),
    })
}

fn join(reason: &str, message: &str) -> String {
    let text = if message.is_empty() {
        reason.to_owned()
    } else {
        format!("{reason}: {message}")
    };
    text.chars().take(300).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};

    fn deployment(replicas: i32, status: DeploymentStatus) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.name = Some("web".into());
        d.metadata.generation = Some(2);
        d.spec = Some(DeploymentSpec {
            replicas: Some(replicas),
            ..DeploymentSpec::default()
        });
        d.status = Some(status);
        d
    }

    #[test]
    fn a_rollout_is_available_when_every_replica_is_updated_and_available() {
        let d = deployment(
            2,
            DeploymentStatus {
                observed_generation: Some(2),
                replicas: Some(2),
                updated_replicas: Some(2),
                ready_replicas: Some(2),
                available_replicas: Some(2),
                ..DeploymentStatus::default()
            },
        );
        assert_eq!(deployment_status(&d).rollout, Rollout::Available);
    }

    #[test]
    fn old_generations_and_old_replicas_are_still_progressing() {
        let stale = deployment(
            2,
            DeploymentStatus {
                observed_generation: Some(1),
                replicas: Some(2),
                updated_replicas: Some(2),
                available_replicas: Some(2),
                ..DeploymentStatus::default()
            },
        );
        assert_eq!(deployment_status(&stale).rollout, Rollout::Progressing);
        let surge = deployment(
            2,
            DeploymentStatus {
                observed_generation: Some(2),
                replicas: Some(3),
                updated_replicas: Some(2),
                available_replicas: Some(2),
                ..DeploymentStatus::default()
            },
        );
        assert_eq!(deployment_status(&surge).rollout, Rollout::Progressing);
    }

    #[test]
    fn a_deadline_exceeded_rollout_failed_with_its_message() {
        let d = deployment(
            1,
            DeploymentStatus {
                observed_generation: Some(2),
                conditions: Some(vec![DeploymentCondition {
                    type_: "Progressing".into(),
                    status: "False".into(),
                    reason: Some("ProgressDeadlineExceeded".into()),
                    message: Some("ReplicaSet \"web-1\" has timed out progressing.".into()),
                    ..DeploymentCondition::default()
                }]),
                ..DeploymentStatus::default()
            },
        );
        let s = deployment_status(&d);
        assert_eq!(s.rollout, Rollout::Failed);
        assert!(s.reason.unwrap().contains("timed out"));
    }
}
