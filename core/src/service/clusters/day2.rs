//! Day-2 operations on a cluster (delete, scale, upgrade): checked against its template, then
//! queued as durable operations.

use super::Clusters;
use crate::approval::Approval;
use crate::audit::{action, AuditEvent};
use crate::cluster::{
    Cluster, ClusterEvent, ClusterState, EventKind, Operation, OperationKind, OperationTarget,
    Template,
};
use crate::policy::Permission;
use crate::provisioner::{ParamSchema, Params};
use crate::rollout::Rollout;
use crate::service::templates::refined_schema;
use crate::{Actor, Error, Result, ValidationError};

/// On whose word an operation is queued, beyond the actor's own.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Via<'a> {
    /// The actor's own request.
    Direct,
    /// A request a second person (the actor) approved.
    Approval(&'a Approval),
    /// A wave of a rollout (the actor is the system, acting for the rollout's creator).
    Rollout(&'a Rollout),
    /// An autoscaling decision (the actor is the system), for this reason.
    Autoscaler(&'a str),
}

/// Who the timeline and operations name for the autoscaler's scales.
const AUTOSCALER: &str = "autoscaler";

/// The first eight characters of an id: how timelines name a rollout.
pub(crate) fn short_id(id: uuid::Uuid) -> String {
    id.to_string().chars().take(8).collect()
}

impl Clusters {
    /// Queues the deletion of a cluster.
    pub async fn delete_cluster(&self, actor: &Actor, id: &str) -> Result<Operation> {
        self.enqueue(
            actor,
            id,
            OperationKind::Delete,
            None,
            action::CLUSTER_DELETE,
        )
        .await
    }

    /// Queues a change of the node count (provisioners that can scale).
    pub async fn scale_cluster(&self, actor: &Actor, id: &str, nodes: u32) -> Result<Operation> {
        if !(1..=1000).contains(&nodes) {
            return Err(ValidationError::new("node_count", "must be between 1 and 1000").into());
        }
        self.enqueue(
            actor,
            id,
            OperationKind::Scale,
            Some(OperationTarget::Nodes(nodes)),
            action::CLUSTER_SCALE,
        )
        .await
    }

    /// Queues a Kubernetes upgrade (provisioners that can upgrade).
    pub async fn upgrade_cluster(
        &self,
        actor: &Actor,
        id: &str,
        version: &str,
    ) -> Result<Operation> {
        let Some(v) = crate::rollout::version::shaped(version) else {
            return Err(
                ValidationError::new("kubernetes_version", crate::rollout::version::SHAPE).into(),
            );
        };
        self.enqueue(
            actor,
            id,
            OperationKind::Upgrade,
            Some(OperationTarget::Version(v.to_owned())),
            action::CLUSTER_UPGRADE,
        )
        .await
    }

    pub(super) async fn enqueue(
        &self,
        actor: &Actor,
        id: &str,
        kind: OperationKind,
        target: Option<OperationTarget>,
        verb: &str,
    ) -> Result<Operation> {
        let cluster = self.visible_cluster(actor, id, verb).await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let result = match (kind, cluster.production) {
            (OperationKind::Delete, true) => Err(Error::Conflict(format!(
                "{} is a production cluster: deleting it needs a second person's approval. Ask \
                 for it (POST /api/v1/clusters/{}/approvals with action \"delete\", or \
                 \"Request deletion\" on its page); an operator or tenant admin other than you \
                 approves it",
                cluster.name, cluster.id
            ))),
            _ => {
                self.try_enqueue(actor, &cluster, kind, target, verb, Via::Direct)
                    .await
            }
        };
        self.guard
            .audited(
                actor,
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Queues operation `kind` on `cluster` for `actor`, who may; `via` says on whose word
    /// beyond the actor's (the timeline and audit name them).
    pub(crate) async fn try_enqueue(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        kind: OperationKind,
        target: Option<OperationTarget>,
        verb: &str,
        via: Via<'_>,
    ) -> Result<Operation> {
        let caps = self.capabilities_of(cluster).await?;
        let state = match kind {
            OperationKind::Delete => ClusterState::Deleting,
            OperationKind::Scale if !caps.scale => {
                return Err(Error::Conflict(format!(
                    "{} clusters cannot be scaled",
                    cluster.provider_kind
                )))
            }
            OperationKind::Upgrade if !caps.upgrade => {
                return Err(Error::Conflict(format!(
                    "{} clusters cannot be upgraded",
                    cluster.provider_kind
                )))
            }
            OperationKind::ReplaceNode if !caps.replace_node => {
                return Err(Error::Conflict(format!(
                    "the provider of {} cannot replace nodes",
                    cluster.name
                )))
            }
            _ if cluster.state != ClusterState::Ready => {
                return Err(Error::Conflict(format!(
                    "the cluster is {}; it can be changed when Ready",
                    cluster.state.label()
                )))
            }
            _ => ClusterState::Updating,
        };
        // The template is read once, here: gone is the provisioner's schema and the default
        // timeout; any other error (a store that cannot answer, a row it cannot read) is the
        // request's, and nothing is queued.
        let template = self.template_of(cluster).await?;
        let target = match (kind, target) {
            (OperationKind::Scale, Some(OperationTarget::Nodes(n))) => {
                let checked = self.check_against_template(
                    cluster,
                    template.as_ref(),
                    "node_count",
                    &n.to_string(),
                )?;
                let nodes = checked.parse().map_err(|_| {
                    ValidationError::new("node_count", "must be a whole number of nodes")
                })?;
                Some(OperationTarget::Nodes(nodes))
            }
            (OperationKind::Upgrade, Some(OperationTarget::Version(v))) => {
                let checked = self.check_against_template(
                    cluster,
                    template.as_ref(),
                    "kubernetes_version",
                    &v,
                )?;
                Some(OperationTarget::Version(checked))
            }
            (_, target) => target,
        };
        // The node quota of a scale is checked by the store, in the transaction that queues it.
        let now = crate::clock::now();
        let who = match via {
            Via::Rollout(r) => format!("rollout {} of {}", short_id(r.id), r.created_by),
            Via::Autoscaler(_) => AUTOSCALER.to_owned(),
            _ => actor.to_string(),
        };
        let approval = match via {
            Via::Approval(a) => Some(a),
            _ => None,
        };
        let timeout = template.as_ref().map_or(60, |t| t.timeout_minutes);
        let op = Operation::new(
            cluster.id,
            kind,
            target.clone(),
            &who,
            now,
            chrono::Duration::minutes(i64::from(timeout)),
        );
        let what = match (&kind, &target, approval) {
            (OperationKind::Scale, Some(t), _) => match via {
                Via::Autoscaler(reason) => format!("Autoscaling: {reason}"),
                _ => format!("Scale to {t} nodes requested by {who}"),
            },
            (OperationKind::Upgrade, Some(v), _) => match via {
                Via::Rollout(r) => format!(
                    "Upgrade to {v} requested by {who} (wave {} of {})",
                    r.wave + 1,
                    r.waves
                ),
                _ => format!("Upgrade to {v} requested by {who}"),
            },
            (OperationKind::ReplaceNode, Some(n), _) => {
                format!("Replacement of node {n} requested by {who}")
            }
            (_, _, Some(a)) => format!(
                "Deletion requested by {}, approved by {who}",
                a.requested_by
            ),
            _ => format!("Deletion requested by {who}"),
        };
        let event = ClusterEvent::new(cluster.id, Some(op.id), EventKind::State, what, now);
        let mut details = Vec::new();
        if let Some(t) = &target {
            details.push(t.to_string());
        }
        if let Some(a) = approval {
            details.push(format!("approved request {} of {}", a.id, a.requested_by));
        }
        if let Via::Autoscaler(reason) = via {
            details.push(format!("autoscaling: {reason}"));
        }
        if let Via::Rollout(r) = via {
            details.push(format!(
                "rollout {} of {}, wave {} of {}",
                r.id,
                r.created_by,
                r.wave + 1,
                r.waves
            ));
        }
        let mut audit =
            AuditEvent::success(actor, verb, cluster.name.as_str()).in_tenant(cluster.tenant_id);
        if !details.is_empty() {
            audit = audit.with_detail(details.join("; "));
        }
        self.deps
            .store
            .enqueue_operation(&op, state, &event, &audit, approval.is_some())
            .await?;
        Ok(op)
    }

    /// Why `cluster` cannot be upgraded to `version`: its provider cannot upgrade, or its
    /// `template` (as [`Self::template_of`] reads it) fixes the version or does not offer it.
    /// None when it can. What a rollout's plan says of the clusters it leaves out.
    pub(crate) async fn upgrade_refusal(
        &self,
        cluster: &Cluster,
        template: Option<&Template>,
        version: &str,
    ) -> Result<Option<String>> {
        if !self.capabilities_of(cluster).await?.upgrade {
            return Ok(Some(format!(
                "its provider ({}) cannot upgrade clusters",
                cluster.provider_kind
            )));
        }
        match self.check_against_template(cluster, template, "kubernetes_version", version) {
            Ok(_) => Ok(None),
            Err(Error::Invalid(v)) => Ok(Some(format!("its template: {}", v.message))),
            Err(e) => Err(e),
        }
    }

    /// A scale or upgrade target checked against what the cluster's template allows: a
    /// parameter the template fixes cannot change, and a new value must be within the
    /// template's range or among its options (the provisioner's schema when the template is
    /// gone). Returns the value as the schema normalises it.
    pub(crate) fn check_against_template(
        &self,
        cluster: &Cluster,
        template: Option<&Template>,
        name: &'static str,
        value: &str,
    ) -> Result<String> {
        let (schema, fixed, by) = self.template_schema(cluster, template)?;
        if let Some(v) = fixed.get(name) {
            if v != value {
                return Err(ValidationError::new(
                    name,
                    format!("is fixed at {v} by template {by}"),
                )
                .into());
            }
        }
        let Some(spec) = schema.get(name) else {
            return Ok(value.to_owned());
        };
        let one = ParamSchema::new(vec![spec.clone()]);
        let input: Params = [(name.to_owned(), value.to_owned())].into();
        let checked = one.validate(&input)?;
        Ok(checked
            .get(name)
            .cloned()
            .unwrap_or_else(|| value.to_owned()))
    }

    /// The template the cluster was made from; None when it has none or it was deleted. Any
    /// other error of the store is returned as it is.
    pub(crate) async fn template_of(&self, cluster: &Cluster) -> Result<Option<Template>> {
        let Some(id) = cluster.template_id else {
            return Ok(None);
        };
        match self.deps.store.template(id).await {
            Ok(t) => Ok(Some(t)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The cluster parameters its `template` allows (refined schema), the values it fixes,
    /// and the template's name; the provisioner's schema when the template is gone.
    pub(super) fn template_schema(
        &self,
        cluster: &Cluster,
        template: Option<&Template>,
    ) -> Result<(ParamSchema, Params, String)> {
        let provisioner = self.catalog.provisioner(cluster.provider_kind)?;
        Ok(match template {
            Some(t) => {
                let (schema, fixed) = refined_schema(provisioner.as_ref(), t)?;
                (schema, fixed, t.name.clone())
            }
            None => (provisioner.cluster_schema(), Params::new(), String::new()),
        })
    }
}
