//! Following a Cluster while Cluster API works on it: every condition change is a line of
//! the timeline, every new milestone a step (its text carries the condition holding it up,
//! so a timeout says what Cluster API last reported), the Machines ready out of those
//! desired while a scale or upgrade converges, and the Cluster's removal after a delete.

use std::time::Duration;

use serde_json::Value;

use super::management::{failed, kubeconfig_secret_name, Management};
use super::status::{self, count_machines};
use super::{topology, Checkpoint, Target};
use crate::provisioner::{OpContext, ProvisionError, Step};

/// Reports `step` when it differs from the last one reported by this operation.
pub(super) fn step_once(ctx: &mut OpContext, step: &str) -> Result<(), ProvisionError> {
    let mut checkpoint = Checkpoint::of(ctx)?;
    if checkpoint.step.as_deref() != Some(step) {
        ctx.reporter.step(step);
        checkpoint.step = Some(step.to_owned());
        ctx.write_checkpoint(&checkpoint);
    }
    Ok(())
}

/// Logs the conditions that changed since the last look.
fn log_changes(ctx: &mut OpContext, observed: &status::Observed) -> Result<(), ProvisionError> {
    let mut checkpoint = Checkpoint::of(ctx)?;
    let (lines, now) = observed.changes(&checkpoint.seen);
    for line in lines {
        ctx.reporter.log(line);
    }
    checkpoint.seen = now;
    ctx.write_checkpoint(&checkpoint);
    Ok(())
}

/// One look at a Cluster being created: Done once its control plane is available and its
/// kubeconfig Secret holds a `value`.
pub(super) async fn create(
    ctx: &mut OpContext,
    m: &Management,
    poll: Duration,
) -> Result<Step<()>, ProvisionError> {
    let at = Checkpoint::of(ctx)?
        .target()
        .ok_or_else(|| failed("which Cluster this is was not recorded"))?;
    let Some(object) = m.cluster(&at.namespace, &at.name).await? else {
        return Err(failed(format!(
            "the Cluster {at} disappeared from the management cluster"
        )));
    };
    let observed = status::observe(&object);
    log_changes(ctx, &observed)?;
    if let Some(why) = &observed.failure {
        return Err(failed(format!(
            "Cluster API reports the cluster failed: {why}"
        )));
    }
    if observed.deleting {
        return Err(failed(format!(
            "the Cluster {at} is being deleted in the management cluster"
        )));
    }
    let (waiting, percent) = observed.waiting_for();
    ctx.reporter.progress(percent);
    if !observed.control_plane_available {
        step_once(ctx, &waiting)?;
        return Ok(Step::Wait(poll));
    }
    let machines = count_machines(&m.machines(&at.namespace, &at.name).await?, None);
    let desired = desired_machines(&object, &machines);
    if m.kubeconfig_secret(&at.namespace, &at.name)
        .await?
        .is_none()
    {
        step_once(
            ctx,
            &format!(
                "Control plane available; waiting for the kubeconfig Secret {}/{} (key value)",
                at.namespace,
                kubeconfig_secret_name(&at.name)
            ),
        )?;
        return Ok(Step::Wait(poll));
    }
    // How far the workers are, as far as it is known (MachinePools are not Machines).
    let pool_counts = topology::has_machine_pools(&object)
        .then(|| status::counted(&object, "workers"))
        .flatten();
    let step = match pool_counts {
        Some(c) => format!(
            "Control plane available, {} of {} workers ready",
            c.ready,
            topology::desired_workers(&object)
        ),
        None if topology::has_machine_pools(&object) => "Control plane available".to_owned(),
        None => format!(
            "Control plane available, {} of {desired} machines ready",
            machines.running
        ),
    };
    step_once(ctx, &step)?;
    ctx.reporter.progress(90);
    Ok(Step::Done(()))
}

/// One look at a scale or upgrade: Done when the Machines are as many as the topology asks,
/// all running (at `version`, for an upgrade).
pub(super) async fn converge(
    ctx: &mut OpContext,
    m: &Management,
    at: &Target,
    version: Option<&str>,
    poll: Duration,
) -> Result<Step<()>, ProvisionError> {
    let Some(object) = m.cluster(&at.namespace, &at.name).await? else {
        return Err(failed(format!(
            "the Cluster {at} no longer exists in the management cluster"
        )));
    };
    let observed = status::observe(&object);
    log_changes(ctx, &observed)?;
    if let Some(why) = &observed.failure {
        return Err(failed(format!(
            "Cluster API reports the cluster failed: {why}"
        )));
    }
    let machines = count_machines(&m.machines(&at.namespace, &at.name).await?, version);
    let workers = topology::desired_workers(&object);
    // MachinePools are a cloud's scale sets or node pools: Cluster API counts them, not
    // as Machines.
    let pools = topology::has_machine_pools(&object).then(|| status::counted(&object, "workers"));
    if let Some(None) = pools {
        // Its counts still describe the spec before the change.
        step_once(ctx, "Waiting for Cluster API to take the change in")?;
        return Ok(Step::Wait(poll));
    }
    let (ready, desired, done) = match (version, pools.flatten()) {
        (Some(v), Some(c)) => {
            let control_plane_done = status::counted(&object, "controlPlane")
                .is_none_or(|c| c.up_to_date == c.desired && c.ready == c.desired);
            let ready = c.up_to_date.min(c.ready);
            let done = control_plane_done
                && c.desired == workers
                && ready == workers
                && c.replicas == workers;
            step_once(ctx, &format!("Workers at {v}: {ready} of {workers} ready"))?;
            (ready, workers, done)
        }
        (Some(v), None) => {
            let desired = desired_machines(&object, &machines);
            let ready = machines.running_at_version;
            step_once(ctx, &format!("Machines at {v}: {ready} of {desired} ready"))?;
            (
                ready,
                desired,
                ready == desired && machines.total == desired,
            )
        }
        (None, Some(c)) => {
            let done = c.desired == workers && c.ready == workers && c.replicas == workers;
            step_once(
                ctx,
                &format!("Workers: {} of {workers} machines ready", c.ready),
            )?;
            (c.ready, workers, done)
        }
        (None, None) => {
            let ready = machines.workers_running;
            step_once(
                ctx,
                &format!("Workers: {ready} of {workers} machines ready"),
            )?;
            (
                ready,
                workers,
                ready == workers && machines.workers == workers,
            )
        }
    };
    let percent = (u64::from(ready) * 100 / u64::from(desired.max(1))).min(99) as u8;
    ctx.reporter.progress(percent);
    if done {
        Ok(Step::Done(()))
    } else {
        Ok(Step::Wait(poll))
    }
}

/// The machines a cluster's topology asks for: its control plane (as many as are there when
/// the topology leaves the number to the ClusterClass or the control plane is a managed
/// service) and its workers.
fn desired_machines(object: &Value, machines: &status::Machines) -> u32 {
    topology::control_plane_replicas(object).unwrap_or(machines.control_plane)
        + topology::desired_workers(object)
}

/// One look at a Cluster being deleted: deletes it first, then waits until it is gone.
pub(super) async fn delete(
    ctx: &mut OpContext,
    m: &Management,
    at: &Target,
    object: &Value,
    poll: Duration,
) -> Result<Step<()>, ProvisionError> {
    if object.pointer("/metadata/deletionTimestamp").is_none() {
        super::delete_cluster(m, at).await?;
        ctx.reporter.log(format!("deleted the Cluster {at}"));
    }
    let machines = count_machines(&m.machines(&at.namespace, &at.name).await?, None);
    step_once(
        ctx,
        &format!(
            "Waiting for Cluster API to remove {at} ({} machines left)",
            machines.total
        ),
    )?;
    Ok(Step::Wait(poll))
}
