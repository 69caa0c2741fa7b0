//! The first phase of a replace-node operation: the dead node's Node object is deleted from
//! the cluster (through its stored admin kubeconfig), so that its pods are rescheduled and
//! the replacement machine can join under any name, the dead one's included. A node that is
//! Ready again fails the operation: nothing is replaced.

use std::time::Duration;

use crate::kubernetes::{self, Removal};
use crate::provisioner::{OpContext, ProvisionError, Step};

/// How long one request to the cluster may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A client of the operation's cluster, from its stored admin kubeconfig.
pub(super) async fn cluster_client(
    ctx: &OpContext,
    allow_exec: bool,
) -> Result<kube::Client, ProvisionError> {
    let admin = ctx
        .admin_kubeconfig
        .as_ref()
        .ok_or_else(|| ProvisionError::Failed("no kubeconfig is stored for this cluster".into()))?;
    let text = std::str::from_utf8(admin.expose())
        .map_err(|_| ProvisionError::Failed("the stored kubeconfig is not UTF-8".into()))?;
    let parsed = kubernetes::parse_kubeconfig(text, None, allow_exec).map_err(|e| {
        ProvisionError::Failed(format!("the stored kubeconfig is unusable: {}", e.message))
    })?;
    kubernetes::client(&parsed, TIMEOUT)
        .await
        .map_err(|e| ProvisionError::Transient(format!("cannot reach the cluster: {e}")))
}

pub(super) async fn remove(
    ctx: &mut OpContext,
    allow_exec: bool,
    node: &str,
) -> Result<Step<Option<crate::provisioner::Provisioned>>, ProvisionError> {
    ctx.reporter
        .step(format!("Removing node {node} from the cluster"));
    let client = cluster_client(ctx, allow_exec).await?;
    match kubernetes::remove_dead_node(&client, node).await {
        Ok(Removal::Removed(dead)) => {
            let since = dead
                .not_ready_since
                .map(|t| format!(" since {}", t.format("%Y-%m-%d %H:%M:%S UTC")))
                .unwrap_or_default();
            ctx.reporter.log(format!(
                "removed node {node} (not Ready{since}: {})",
                dead.reason
            ));
            Ok(Step::Done(None))
        }
        Ok(Removal::Missing) => {
            ctx.reporter
                .log(format!("node {node} is no longer in the cluster"));
            Ok(Step::Done(None))
        }
        Ok(Removal::Ready) => Err(ProvisionError::Failed(format!(
            "node {node} is Ready again: only a node that is not Ready is replaced"
        ))),
        Ok(Removal::Changing) => Err(ProvisionError::Transient(format!(
            "node {node} changed under every attempt to remove it"
        ))),
        Err(e) => Err(ProvisionError::Transient(format!(
            "cannot remove node {node}: {}",
            kubernetes::one_line(&e.to_string(), 300)
        ))),
    }
}
