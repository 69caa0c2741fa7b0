//! Replacing a dead node: a tenant admin or an operator picks a node of the cluster that is
//! not Ready; once the cluster confirms it (asked at once, not from the last inventory sync),
//! a replace-node operation is queued (the engine removes the Node object, then the
//! provisioner replaces the machine).

use super::Clusters;
use crate::audit::action;
use crate::cluster::{ClusterState, Operation, OperationKind, OperationTarget};
use crate::kubernetes::{self, NodeCheck};
use crate::policy::Permission;
use crate::{Actor, Error, Result, ValidationError};

impl Clusters {
    /// Queues the replacement of node `node` of cluster `id`.
    pub async fn replace_node(&self, actor: &Actor, id: &str, node: &str) -> Result<Operation> {
        let verb = action::CLUSTER_REPLACE_NODE;
        let cluster = self.visible_cluster(actor, id, verb).await?;
        self.guard
            .authorize(
                actor,
                Permission::ReplaceNodes(cluster.tenant_id),
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let result = async {
            let node = node.trim();
            if !kubernetes::is_node_name(node) {
                return Err(ValidationError::new(
                    "node",
                    "must be a node name (lower-case letters, digits, '-' and '.')",
                )
                .into());
            }
            if !self.capabilities_of(&cluster).await?.replace_node {
                return Err(Error::Conflict(format!(
                    "the provider of {} cannot replace nodes",
                    cluster.name
                )));
            }
            // Before asking the cluster: a busy one answers at once.
            if cluster.state != ClusterState::Ready {
                return Err(Error::Conflict(format!(
                    "the cluster is {}; it can be changed when Ready",
                    cluster.state.label()
                )));
            }
            let (client, _) = self.admin.admin_client(&cluster).await?;
            match kubernetes::dead_node(&client, node).await {
                Ok(NodeCheck::Dead(_)) => {}
                Ok(NodeCheck::Ready) => {
                    return Err(Error::Conflict(format!(
                        "node {node} is Ready: only a node that is not Ready can be replaced"
                    )))
                }
                Ok(NodeCheck::Missing) => {
                    return Err(
                        ValidationError::new("node", "is not a node of this cluster").into(),
                    )
                }
                Err(e) => {
                    return Err(Error::Conflict(format!(
                        "cannot read the cluster's nodes: {}",
                        kubernetes::one_line(&e.to_string(), 300)
                    )))
                }
            }
            self.try_enqueue(
                actor,
                &cluster,
                OperationKind::ReplaceNode,
                Some(OperationTarget::Node(node.to_owned())),
                verb,
                super::Via::Direct,
            )
            .await
        }
        .await;
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
}
