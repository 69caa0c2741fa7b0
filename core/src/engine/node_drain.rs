//! A scale that removes a chosen node (the autoscaler's scale-down): first the node is
//! drained (cordoned, its pods evicted through the Eviction API, pass after pass until none
//! is left, within the operation's deadline), then the provisioner removes that node's
//! machine, then the node's Node object is deleted if the machine's end left it behind. A
//! scale-down that ends before its machine is removed (it failed, or its deadline passed
//! while a disruption budget kept a pod) gives the node back: it is uncordoned.

use std::time::Duration;

use super::node_removal::cluster_client;
use crate::kubernetes;
use crate::provisioner::{OpContext, ProvisionError, Step};

/// How long between two drain passes while pods are leaving.
const PASS_EVERY: Duration = Duration::from_secs(5);

/// One drain pass over `node`; `Done` once nothing that must leave is left.
pub(super) async fn drain(
    ctx: &mut OpContext,
    allow_exec: bool,
    node: &str,
) -> Result<Step<Option<crate::provisioner::Provisioned>>, ProvisionError> {
    ctx.reporter.step(format!("Draining node {node}"));
    let client = cluster_client(ctx, allow_exec).await?;
    let pass = kubernetes::drain_pass(&client, node)
        .await
        .map_err(|e| transient(&format!("cannot drain node {node}"), &e))?;
    if !pass.found {
        ctx.reporter
            .log(format!("node {node} is no longer in the cluster"));
        return Ok(Step::Done(None));
    }
    for pod in &pass.evicted {
        ctx.reporter
            .log(format!("evicted pod {pod} from node {node}"));
    }
    if pass.drained() {
        ctx.reporter.log(format!("node {node} is drained"));
        return Ok(Step::Done(None));
    }
    ctx.reporter.log(format!(
        "waiting for {} to leave node {node}: {}",
        match pass.left.len() {
            1 => "1 pod".to_owned(),
            n => format!("{n} pods"),
        },
        pass.left
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(Step::Wait(PASS_EVERY))
}

/// After the provisioner removed the machine of `node`: its Node object goes too (a machine
/// that is gone never deletes its own).
pub(super) async fn forget(
    ctx: &mut OpContext,
    allow_exec: bool,
    node: &str,
) -> Result<(), ProvisionError> {
    let client = cluster_client(ctx, allow_exec).await?;
    match kubernetes::remove_node(&client, node).await {
        Ok(true) => ctx
            .reporter
            .log(format!("removed node {node} from the cluster")),
        Ok(false) => {}
        Err(e) => return Err(transient(&format!("cannot remove node {node}"), &e)),
    }
    Ok(())
}

/// The scale-down ended while `node` was still being drained: it is uncordoned, so a drain a
/// disruption budget never allowed does not leave a healthy node unschedulable. Best effort:
/// the timeline says what happened either way.
pub(super) async fn give_back(ctx: &mut OpContext, allow_exec: bool, node: &str) {
    let uncordoned = match cluster_client(ctx, allow_exec).await {
        Ok(client) => kubernetes::cordon(&client, node, false)
            .await
            .map_err(|e| kubernetes::one_line(&e.to_string(), 300)),
        Err(e) => Err(e.to_string()),
    };
    match uncordoned {
        Ok(true) => ctx.reporter.log(format!(
            "node {node} takes pods again: the scale-down did not finish"
        )),
        Ok(false) => {}
        Err(why) => ctx.reporter.log(format!(
            "node {node} stays cordoned: cannot uncordon it: {why}"
        )),
    }
}

fn transient(what: &str, e: &kube::Error) -> ProvisionError {
    ProvisionError::Transient(format!(
        "{what}: {}",
        kubernetes::one_line(&e.to_string(), 300)
    ))
}
