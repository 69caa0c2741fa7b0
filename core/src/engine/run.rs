//! One provisioner operation's run (create, delete, scale, upgrade, replace a node): its calls, from where
//! its checkpoint says, and what each call's outcome leads to (wait, retry later, fail, the
//! next phase, done).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;

use super::checkpoint::{Checkpoint, Phase};
use super::tracker::Tracker;
use super::{
    check_kubeconfig, chrono_duration, context, lease_token, map_step, remove_work_dir, Engine,
    Stop,
};
use super::{node_drain, node_removal};
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationKind};
use crate::provisioner::{OpContext, ProvisionError, Provisioned, Provisioner, Reporter, Step};
use crate::Result;

/// What a provisioner call gives back.
type Called = std::result::Result<Step<Option<Provisioned>>, ProvisionError>;

impl Engine {
    /// Runs a provisioner operation until it ends, is rescheduled or loses its lease.
    pub(super) async fn execute_provisioner(
        &self,
        op: Operation,
        cluster: Cluster,
    ) -> Result<(), Stop> {
        let (mut ctx, provisioner, checkpoint) = match self.prepare(&op, &cluster).await {
            Ok(prepared) => prepared,
            Err(why) => return self.fail(&op, &why).await,
        };
        if op.attempts > 1 {
            let owner = lease_token(&op);
            let line = format!("Resumed by worker {owner} (attempt {})", op.attempts);
            self.record(&op, EventKind::Step, line).await?;
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        ctx.reporter = Reporter::new(tx);
        let mut phase = checkpoint.phase();
        let mut tracker = Tracker::new(&op, checkpoint);
        if tracker.step == crate::cluster::WAITING_STEP {
            // A worker runs it now: never "waiting" from here on, even before the
            // provisioner names its first step.
            tracker.step = crate::cluster::STARTING_STEP.into();
            tracker.dirty = true;
            self.flush(&op, &mut tracker, None).await?;
        }
        loop {
            // One call, with the lease renewed and progress flushed meanwhile.
            let call = call(&op, provisioner.as_ref(), &mut ctx, phase);
            let outcome = self.drive(&op, &mut tracker, &mut rx, call).await?;
            while let Ok(r) = rx.try_recv() {
                tracker.apply(r);
            }
            let saved = Checkpoint::new(phase, ctx.checkpoint.clone());
            // A scale-down that ends here, its node still being drained, gives it back.
            let ends = match &outcome {
                Err(_) | Ok(Err(ProvisionError::Failed(_) | ProvisionError::Unsupported(_))) => {
                    true
                }
                Ok(Err(ProvisionError::Transient(_))) => self.gives_up(&op),
                Ok(Ok(_)) => false,
            };
            if ends && phase == Phase::Create {
                if let Some(node) = op.removed_node() {
                    let allow_exec = provisioner.allows_exec(&ctx.provider_config);
                    node_drain::give_back(&mut ctx, allow_exec, node).await;
                    while let Ok(r) = rx.try_recv() {
                        tracker.apply(r);
                    }
                }
            }
            let Ok(called) = outcome else {
                return self.timed_out(&op, &mut tracker, &saved).await;
            };
            match called {
                Err(ProvisionError::Transient(why)) => {
                    return self.retry_later(&op, &mut tracker, &saved, &why).await;
                }
                Err(e) => {
                    self.flush(&op, &mut tracker, Some(&saved)).await?;
                    return self.fail(&op, &e.to_string()).await;
                }
                Ok(Step::Wait(pause)) => {
                    self.flush(&op, &mut tracker, Some(&saved)).await?;
                    let pause = pause.min(self.config.max_wait);
                    if Utc::now() + chrono_duration(pause) > op.deadline_at {
                        continue; // the next call times out and reports where it stopped
                    }
                    self.sleep_holding_lease(&op, pause).await?;
                }
                Ok(Step::Done(None)) if op.kind == OperationKind::Create => {
                    phase = Phase::Kubeconfig;
                    tracker.step("Fetching the kubeconfig");
                    let next = Checkpoint::new(phase, ctx.checkpoint.clone());
                    self.flush(&op, &mut tracker, Some(&next)).await?;
                }
                Ok(Step::Done(None))
                    if phase == Phase::Create
                        && (op.kind == OperationKind::ReplaceNode
                            || op.removed_node().is_some()) =>
                {
                    phase = Phase::Replace;
                    let step = match op.removed_node() {
                        Some(node) => format!("Removing the machine of node {node}"),
                        None => "Replacing the machine".to_owned(),
                    };
                    tracker.step(&step);
                    let next = Checkpoint::new(phase, ctx.checkpoint.clone());
                    self.flush(&op, &mut tracker, Some(&next)).await?;
                }
                Ok(Step::Done(provisioned)) => {
                    let run = Finished {
                        op: &op,
                        cluster: &cluster,
                        provisioner: provisioner.as_ref(),
                        ctx: &ctx,
                        saved: &saved,
                    };
                    return self.done(run, provisioned, &mut tracker).await;
                }
            }
        }
    }

    /// The call's context, its provisioner and the checkpoint to go on from; or why the
    /// operation cannot run.
    async fn prepare(
        &self,
        op: &Operation,
        cluster: &Cluster,
    ) -> std::result::Result<(OpContext, Arc<dyn Provisioner>, Checkpoint), String> {
        let checkpoint = Checkpoint::read(&op.checkpoint)?;
        let ctx = context::op_context(&self.deps, cluster, op, &checkpoint, &self.config.work_dir)
            .await
            .map_err(|e| e.to_string())?;
        let provisioner = self
            .deps
            .registry
            .get(cluster.provider_kind)
            .ok_or_else(|| {
                format!(
                    "no provisioner of kind {} in this portal",
                    cluster.provider_kind
                )
            })?;
        Ok((ctx, provisioner, checkpoint))
    }

    /// The deadline passed during a call: the operation fails, naming the step it was on.
    async fn timed_out(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        saved: &Checkpoint,
    ) -> Result<(), Stop> {
        let minutes = (op.deadline_at - op.created_at).num_minutes();
        let why = format!(
            "timed out after {minutes} min during step \"{}\"",
            tracker.step
        );
        self.flush(op, tracker, Some(saved)).await?;
        self.fail(op, &why).await
    }

    /// Whether a transient error now ends the operation: it has had its attempts.
    fn gives_up(&self, op: &Operation) -> bool {
        op.attempts >= self.config.max_attempts
    }

    /// A transient error: the operation runs again after a back-off (doubling per attempt,
    /// at most 64 s), or fails once it has had its attempts.
    async fn retry_later(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        saved: &Checkpoint,
        why: &str,
    ) -> Result<(), Stop> {
        self.flush(op, tracker, Some(saved)).await?;
        if self.gives_up(op) {
            let why = format!("gave up after {} attempts: {why}", op.attempts);
            return self.fail(op, &why).await;
        }
        let backoff = Duration::from_secs(2u64.saturating_pow(op.attempts.min(6)));
        let event = ClusterEvent::new(
            op.cluster_id,
            Some(op.id),
            EventKind::Error,
            format!("{why} (retrying in {} s)", backoff.as_secs()),
            crate::clock::now(),
        );
        let run_after = crate::clock::now() + chrono_duration(backoff);
        match self
            .deps
            .store
            .reschedule(
                op.id,
                lease_token(op),
                run_after,
                &saved.to_value(),
                &[event],
            )
            .await
        {
            Ok(true) => Err(Stop::Rescheduled),
            _ => Err(Stop::LostLease),
        }
    }

    /// The provisioner is done: access taken back from a cluster KQueen only forgets, the
    /// kubeconfig checked, the operation succeeded, then the provisioner told (create) or
    /// the working directory removed (a delete that removed the infrastructure).
    async fn done(
        &self,
        run: Finished<'_>,
        provisioned: Option<Provisioned>,
        tracker: &mut Tracker,
    ) -> Result<(), Stop> {
        let Finished {
            op,
            cluster,
            provisioner,
            ctx,
            saved,
        } = run;
        let deletes_infrastructure = provisioner
            .capabilities_for(&ctx.provider_config)
            .deletes_infrastructure;
        if op.kind == OperationKind::Delete && !deletes_infrastructure {
            // The cluster goes on existing without KQueen: take back the access KQueen gave
            // out in it while it still can.
            let within = self.config.lease / 3;
            if let Some(line) = self.hooks.revoke_all_access(cluster, within).await {
                tracker.events.push(ClusterEvent::new(
                    cluster.id,
                    Some(op.id),
                    EventKind::Log,
                    line,
                    crate::clock::now(),
                ));
            }
        }
        if let Some(p) = &provisioned {
            let allow_exec = provisioner.allows_exec(&ctx.provider_config);
            if let Err(why) = check_kubeconfig(p, allow_exec) {
                self.flush(op, tracker, Some(saved)).await?;
                return self.fail(op, &why).await;
            }
        }
        self.succeed(op, cluster, provisioned, tracker).await?;
        match op.kind {
            OperationKind::Create => provisioner.kubeconfig_stored(ctx).await,
            // Kept when the delete only forgot the cluster: the installer's state there may
            // be the only handle on machines still running.
            OperationKind::Delete if deletes_infrastructure => remove_work_dir(&ctx.work_dir).await,
            _ => {}
        }
        Ok(())
    }
}

/// What the end of a run needs to know.
struct Finished<'a> {
    op: &'a Operation,
    cluster: &'a Cluster,
    provisioner: &'a dyn Provisioner,
    ctx: &'a OpContext,
    saved: &'a Checkpoint,
}

/// The provisioner call an operation of this kind makes in `phase`.
async fn call(
    op: &Operation,
    provisioner: &dyn Provisioner,
    ctx: &mut OpContext,
    phase: Phase,
) -> Called {
    match (op.kind, phase) {
        (OperationKind::Create, Phase::Kubeconfig) => provisioner
            .kubeconfig(ctx)
            .await
            .map(|p| Step::Done(Some(p))),
        (OperationKind::Create, Phase::Create) => provisioner.create(ctx).await.map(map_step),
        (OperationKind::Delete, _) => provisioner.delete(ctx).await.map(map_step),
        (OperationKind::Scale, phase) => match (op.nodes(), op.removed_node(), phase) {
            (Err(why), _, _) => Err(ProvisionError::Failed(why)),
            (Ok(nodes), None, _) => provisioner.scale(ctx, nodes).await.map(map_step),
            (Ok(_), Some(node), Phase::Create) => {
                let allow_exec = provisioner.allows_exec(&ctx.provider_config);
                node_drain::drain(ctx, allow_exec, node).await
            }
            (Ok(nodes), Some(node), _) => match provisioner.scale_down(ctx, nodes, node).await? {
                Step::Done(()) => {
                    let allow_exec = provisioner.allows_exec(&ctx.provider_config);
                    node_drain::forget(ctx, allow_exec, node).await?;
                    Ok(Step::Done(None))
                }
                Step::Wait(pause) => Ok(Step::Wait(pause)),
            },
        },
        (OperationKind::Upgrade, _) => match op.version() {
            Ok(v) => provisioner.upgrade(ctx, v).await.map(map_step),
            Err(why) => Err(ProvisionError::Failed(why)),
        },
        (OperationKind::ReplaceNode, phase) => match (op.node(), phase) {
            (Ok(node), Phase::Create) => {
                let allow_exec = provisioner.allows_exec(&ctx.provider_config);
                node_removal::remove(ctx, allow_exec, node).await
            }
            (Ok(node), _) => provisioner.replace_node(ctx, node).await.map(map_step),
            (Err(why), _) => Err(ProvisionError::Failed(why)),
        },
        (kind, _) => Err(ProvisionError::Failed(format!(
            "{kind} is not an operation of provisioners"
        ))),
    }
}
