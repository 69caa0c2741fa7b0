//! How applications travel: the `kqueen_dto::apps` types the REST API and the portal both
//! send, filled from the domain's own.

use kqueen_dto::apps;

use crate::workloads::apply::{Change, ObjectDiff};
use crate::workloads::status::{Rollout, SetStatus};

impl From<crate::workloads::application::Application> for apps::Application {
    fn from(a: crate::workloads::application::Application) -> Self {
        Self {
            id: a.id.to_string(),
            name: a.name,
            version: a.version,
            namespace: a.namespace,
            state: a.state.to_string(),
            error: a.error,
            objects: a.objects.iter().map(ToString::to_string).collect(),
            requested_by: a.requested_by,
            created_at: a.created_at.to_rfc3339(),
            deployed_at: a.deployed_at.map(|t| t.to_rfc3339()),
        }
    }
}

impl From<ObjectDiff> for apps::ObjectDiff {
    fn from(d: ObjectDiff) -> Self {
        let api_version = if d.object.group.is_empty() {
            d.object.version.clone()
        } else {
            format!("{}/{}", d.object.group, d.object.version)
        };
        let (change, fields) = match d.change {
            Change::Created => ("created", Vec::new()),
            Change::Changed { fields } => ("changed", fields),
            Change::Unchanged => ("unchanged", Vec::new()),
            Change::Pruned => ("pruned", Vec::new()),
        };
        Self {
            kind: d.object.kind,
            api_version,
            namespace: d.object.namespace,
            name: d.object.name,
            change: change.to_owned(),
            fields: fields
                .into_iter()
                .map(|f| apps::FieldChange {
                    path: f.path,
                    before: f.before,
                    after: f.after,
                })
                .collect(),
        }
    }
}

impl From<crate::service::DeployPreview> for apps::DeployPreview {
    fn from(p: crate::service::DeployPreview) -> Self {
        Self {
            name: p.name,
            version: p.version,
            namespace: p.namespace,
            namespace_exists: p.namespace_exists,
            applied_as: p.applied_as,
            objects: p.objects.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<crate::service::AppStatus> for apps::ApplicationStatus {
    fn from(s: crate::service::AppStatus) -> Self {
        let SetStatus {
            workloads,
            failing_pods,
            warnings,
        } = s.status.unwrap_or_default();
        Self {
            application: s.application.into(),
            workloads: workloads
                .into_iter()
                .map(|w| apps::Workload {
                    kind: w.kind,
                    name: w.name,
                    desired: w.desired,
                    updated: w.updated,
                    ready: w.ready,
                    available: w.available,
                    rollout: match w.rollout {
                        Rollout::Available => "available",
                        Rollout::Progressing => "progressing",
                        Rollout::Failed => "failed",
                    }
                    .to_owned(),
                    reason: w.reason,
                })
                .collect(),
            failing_pods: failing_pods
                .into_iter()
                .map(|p| apps::FailingPod {
                    name: p.name,
                    reason: p.reason,
                })
                .collect(),
            warnings: warnings
                .into_iter()
                .map(|w| apps::Warning {
                    object: w.object,
                    reason: w.reason,
                    message: w.message,
                    count: w.count,
                })
                .collect(),
            unreachable: s.unreachable,
        }
    }
}

impl From<apps::DeployRequest> for crate::service::DeployRequest {
    fn from(r: apps::DeployRequest) -> Self {
        Self {
            name: r.name,
            version: r.version,
            namespace: r.namespace,
            manifests: r.manifests,
        }
    }
}
