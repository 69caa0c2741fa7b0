//! The operation engine: background workers that execute durable operations.
//!
//! Provisioning never runs inside an HTTP request. A request stores an operation row; a worker
//! claims it with a lease ([`crate::store::OperationStore::claim_operation`]), renews the lease
//! while it works, and writes every change fenced by its owner id, so that
//! - the request returns at once,
//! - a restart resumes unfinished operations (the lease of a dead worker expires and another
//!   worker claims the operation; the provisioner continues from the saved checkpoint),
//! - two portal processes on one database never run the same operation at the same time, and a
//!   worker that lost its lease stops and cannot overwrite the new owner's results.
//!
//! Operations have a deadline (the template's timeout); past it the cluster goes to Error with
//! the reason. Transient provisioner errors are retried with back-off. The engine also deletes
//! clusters whose time-to-live ran out.

mod config;
pub(crate) mod context;
mod finish;
mod hooks;
mod tracker;
mod ttl;
mod workload;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::cluster::{ClusterEvent, EventKind, Operation, OperationKind};
use crate::deps::Deps;
use crate::provisioner::{ProvisionError, Reporter, Step};
use crate::{Error, Result};

pub use config::EngineConfig;
pub(crate) use context::provider_secrets;
pub use hooks::EngineHooks;
use tracker::Tracker;

/// Executes the operations of one installation (its [`Deps`]).
#[derive(Clone)]
pub struct Engine {
    deps: Deps,
    hooks: Arc<dyn EngineHooks>,
    config: Arc<EngineConfig>,
}

/// Why a run stopped without finishing the operation.
enum Stop {
    /// Another worker owns the operation now.
    LostLease,
    /// Rescheduled (transient error).
    Rescheduled,
}

/// The engine's own part of an operation's checkpoint.
const PHASE_CREATE: &str = "create";
const PHASE_KUBECONFIG: &str = "kubeconfig";

impl Engine {
    /// An engine over `deps`; `hooks` are the use cases it calls back (see
    /// `Kqueen::engine`, which passes the installation's own).
    pub fn new(deps: Deps, hooks: Arc<dyn EngineHooks>, config: EngineConfig) -> Self {
        Self {
            deps,
            hooks,
            config: Arc::new(config),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Runs until `shutdown` turns true; unfinished operations stay leased until their lease
    /// expires, then any worker resumes them.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut running = JoinSet::new();
        let mut last_sweep: Option<tokio::time::Instant> = None;
        tracing::info!(owner = %self.config.owner, "operation engine started");
        self.resume_clusters().await;
        loop {
            if *shutdown.borrow() {
                break;
            }
            if last_sweep.is_none_or(|t| t.elapsed() >= self.config.ttl_sweep_interval) {
                last_sweep = Some(tokio::time::Instant::now());
                if let Err(e) = self.sweep_expired().await {
                    tracing::warn!(error = %e, "time-to-live sweep failed");
                }
                // In the background: clusters that do not answer must not hold up operations.
                self.hooks.sweep_access_soon();
            }
            while running.len() < self.config.concurrency {
                match self.claim().await {
                    Ok(Some(op)) => {
                        let me = self.clone();
                        running.spawn(async move { me.execute(op).await });
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "claiming an operation failed");
                        break;
                    }
                }
            }
            tokio::select! {
                _ = shutdown.changed() => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
                _ = tokio::time::sleep(self.config.poll_interval) => {}
            }
        }
        running.shutdown().await;
        tracing::info!("operation engine stopped");
    }

    /// Brings back what Ready clusters run through KQueen (hosted control planes) after a
    /// start: every provisioner that resumes is called for each of its Ready clusters (an
    /// unfinished operation brings its own cluster back when it resumes). Failures are
    /// logged and the pass goes on. Returns how many were resumed.
    pub async fn resume_clusters(&self) -> usize {
        self.record_notices();
        let kinds: Vec<_> = self
            .deps
            .registry
            .kinds()
            .filter(|k| self.deps.registry.get(*k).is_some_and(|p| p.resumes()))
            .collect();
        if kinds.is_empty() {
            return 0;
        }
        let clusters = match self.deps.store.ready_clusters().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the clusters to resume");
                return 0;
            }
        };
        let mut resumed = 0;
        for cluster in clusters {
            if !kinds.contains(&cluster.provider_kind) {
                continue;
            }
            let Some(p) = self.deps.registry.get(cluster.provider_kind) else {
                continue;
            };
            let result = async {
                let mut ctx =
                    context::cluster_context(&self.deps, &cluster, &self.config.work_dir).await?;
                ctx.admin_kubeconfig = context::admin_kubeconfig(&self.deps, &cluster).await?;
                p.resume(&mut ctx)
                    .await
                    .map_err(|e| Error::Backend(e.to_string()))
            }
            .await;
            match result {
                Ok(()) => resumed += 1,
                Err(e) => {
                    tracing::warn!(cluster = %cluster.name, error = %e, "cannot resume a cluster")
                }
            }
        }
        resumed
    }

    /// Records in the clusters' timelines what provisioners tell about them outside
    /// operations (each provisioner's notices are taken once, by the first engine).
    pub fn record_notices(&self) {
        for kind in self.deps.registry.kinds().collect::<Vec<_>>() {
            let Some(mut rx) = self.deps.registry.get(kind).and_then(|p| p.notices()) else {
                continue;
            };
            let store = self.deps.store.clone();
            tokio::spawn(async move {
                while let Some(n) = rx.recv().await {
                    let event = ClusterEvent::new(
                        n.cluster_id,
                        None,
                        n.kind,
                        n.message,
                        crate::clock::now(),
                    );
                    if let Err(e) = store.append_events(&[event]).await {
                        tracing::warn!(cluster = %n.cluster_id, error = %e,
                            "cannot record a notice in the timeline");
                    }
                }
            });
        }
    }

    /// Claims one runnable operation, if any. Each claim holds its own lease token (this
    /// process's owner id plus a random suffix), so that a task of this process that stalled
    /// past its lease cannot write over the task that claimed the operation after it.
    pub async fn claim(&self) -> Result<Option<Operation>> {
        let now = crate::clock::now();
        let until = now + chrono_duration(self.config.lease);
        let token = format!(
            "{}/{}",
            self.config.owner,
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        self.deps.store.claim_operation(&token, now, until).await
    }

    /// Claims and executes runnable operations until none is left (tests, one-shot runs).
    pub async fn run_until_idle(&self) -> Result<usize> {
        let mut n = 0;
        while let Some(op) = self.claim().await? {
            self.execute(op).await;
            n += 1;
        }
        Ok(n)
    }

    /// Executes a claimed operation to its end, or until the lease is lost.
    pub async fn execute(&self, op: Operation) {
        let id = op.id;
        match self.try_execute(op).await {
            Ok(()) | Err(Stop::Rescheduled) => {}
            Err(Stop::LostLease) => {
                tracing::warn!(operation = %id, "lost the lease of an operation; another worker continues it")
            }
        }
    }

    async fn try_execute(&self, op: Operation) -> Result<(), Stop> {
        let store = &self.deps.store;
        let owner = lease_token(&op);
        let cluster = match store.cluster(op.cluster_id).await {
            Ok(c) => c,
            Err(e) => {
                return self
                    .fail(&op, &format!("the cluster cannot be read: {e}"))
                    .await
            }
        };
        tracing::info!(operation = %op.id, cluster = %cluster.name, kind = %op.kind, attempt = op.attempts, "executing operation");
        if op.kind.is_workload() {
            return self.execute_workload(op, cluster).await;
        }
        let mut ctx =
            match context::op_context(&self.deps, &cluster, &op, &self.config.work_dir).await {
                Ok(ctx) => ctx,
                Err(e) => return self.fail(&op, &e.to_string()).await,
            };
        let Some(provisioner) = self.deps.registry.get(cluster.provider_kind) else {
            let msg = format!(
                "no provisioner of kind {} in this portal",
                cluster.provider_kind
            );
            return self.fail(&op, &msg).await;
        };
        let mut phase = op
            .checkpoint
            .pointer("/engine/phase")
            .and_then(|v| v.as_str())
            .unwrap_or(PHASE_CREATE)
            .to_owned();
        if op.attempts > 1 {
            self.record(
                &op,
                EventKind::Step,
                format!("Resumed by worker {owner} (attempt {})", op.attempts),
            )
            .await?;
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        ctx.reporter = Reporter::new(tx);
        let deadline = op.deadline_at;
        let mut tracker = Tracker::new(&op);
        if tracker.step == crate::cluster::WAITING_STEP {
            // A worker runs it now: never "waiting" from here on, even before the
            // provisioner names its first step.
            tracker.step = crate::cluster::STARTING_STEP.into();
            tracker.dirty = true;
            self.flush(&op, &mut tracker, None).await?;
        }
        loop {
            // One provisioner call, with the lease renewed and progress flushed meanwhile.
            let outcome = {
                let call = async {
                    match (op.kind, phase.as_str()) {
                        (OperationKind::Create, PHASE_KUBECONFIG) => provisioner
                            .kubeconfig(&mut ctx)
                            .await
                            .map(|p| Step::Done(Some(p))),
                        (OperationKind::Create, _) => {
                            provisioner.create(&mut ctx).await.map(map_step)
                        }
                        (OperationKind::Delete, _) => {
                            provisioner.delete(&mut ctx).await.map(map_step)
                        }
                        (OperationKind::Scale, _) => match op.nodes() {
                            Ok(nodes) => provisioner.scale(&mut ctx, nodes).await.map(map_step),
                            Err(why) => Err(ProvisionError::Failed(why)),
                        },
                        (OperationKind::Upgrade, _) => match op.version() {
                            Ok(v) => provisioner.upgrade(&mut ctx, v).await.map(map_step),
                            Err(why) => Err(ProvisionError::Failed(why)),
                        },
                        (kind, _) => Err(ProvisionError::Failed(format!(
                            "{kind} is not an operation of provisioners"
                        ))),
                    }
                };
                self.drive(&op, &mut tracker, &mut rx, call).await?
            };
            while let Ok(r) = rx.try_recv() {
                tracker.apply(r);
            }
            let checkpoint = json!({"engine": {"phase": phase}, "provisioner": ctx.checkpoint});
            match outcome {
                Err(_elapsed) => {
                    let minutes = (op.deadline_at - op.created_at).num_minutes();
                    let msg = format!(
                        "timed out after {minutes} min during step \"{}\"",
                        tracker.step
                    );
                    self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                    return self.fail(&op, &msg).await;
                }
                Ok(Err(ProvisionError::Transient(msg))) => {
                    self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                    if op.attempts >= self.config.max_attempts {
                        let msg = format!("gave up after {} attempts: {msg}", op.attempts);
                        return self.fail(&op, &msg).await;
                    }
                    let backoff = Duration::from_secs(2u64.saturating_pow(op.attempts.min(6)));
                    let event = ClusterEvent::new(
                        op.cluster_id,
                        Some(op.id),
                        EventKind::Error,
                        format!("{msg} (retrying in {} s)", backoff.as_secs()),
                        crate::clock::now(),
                    );
                    let run_after = crate::clock::now() + chrono_duration(backoff);
                    return match store
                        .reschedule(op.id, owner, run_after, &checkpoint, &[event])
                        .await
                    {
                        Ok(true) => Err(Stop::Rescheduled),
                        _ => Err(Stop::LostLease),
                    };
                }
                Ok(Err(e)) => {
                    self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                    return self.fail(&op, &e.to_string()).await;
                }
                Ok(Ok(Step::Wait(pause))) => {
                    self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                    let pause = pause.min(self.config.max_wait);
                    if Utc::now() + chrono_duration(pause) > deadline {
                        continue; // the next call times out and reports where it stopped
                    }
                    self.sleep_holding_lease(&op, pause).await?;
                }
                Ok(Ok(Step::Done(None))) if op.kind == OperationKind::Create => {
                    phase = PHASE_KUBECONFIG.into();
                    tracker.step("Fetching the kubeconfig");
                    let checkpoint =
                        json!({"engine": {"phase": phase}, "provisioner": ctx.checkpoint});
                    self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                }
                Ok(Ok(Step::Done(provisioned))) => {
                    if op.kind == OperationKind::Delete
                        && !provisioner
                            .capabilities_for(&ctx.provider_config)
                            .deletes_infrastructure
                    {
                        // The cluster goes on existing without KQueen: take back the access
                        // KQueen gave out in it while it still can.
                        let within = self.config.lease / 3;
                        if let Some(line) = self.hooks.revoke_all_access(&cluster, within).await {
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
                            self.flush(&op, &mut tracker, Some(&checkpoint)).await?;
                            return self.fail(&op, &why).await;
                        }
                    }
                    self.succeed(&op, &cluster, provisioned, &mut tracker)
                        .await?;
                    match op.kind {
                        OperationKind::Create => provisioner.kubeconfig_stored(&ctx).await,
                        // Kept when the delete only forgot the cluster: the installer's state
                        // there may be the only handle on machines still running.
                        OperationKind::Delete
                            if provisioner
                                .capabilities_for(&ctx.provider_config)
                                .deletes_infrastructure =>
                        {
                            remove_work_dir(&ctx.work_dir).await
                        }
                        _ => {}
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Runs one call of an operation until the operation's deadline, renewing its lease and
    /// saving the progress it reports meanwhile (soon after it comes, not only with the
    /// lease: a page reloaded during a long call shows the step the call is on). Err when
    /// the lease is lost; Ok(Err) when the deadline passed first.
    async fn drive<T>(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        rx: &mut mpsc::UnboundedReceiver<crate::provisioner::Report>,
        call: impl std::future::Future<Output = T>,
    ) -> Result<Result<T, tokio::time::error::Elapsed>, Stop> {
        let left = (op.deadline_at - Utc::now()).to_std().unwrap_or_default();
        let call = tokio::time::timeout(left, call);
        tokio::pin!(call);
        let mut tick = tokio::time::interval(self.config.lease / 3);
        tick.tick().await;
        let mut flush_tick = tokio::time::interval(self.config.progress_flush);
        flush_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        flush_tick.tick().await;
        loop {
            tokio::select! {
                res = &mut call => return Ok(res),
                Some(r) = rx.recv() => tracker.apply(r),
                _ = flush_tick.tick(), if tracker.dirty => {
                    self.flush(op, tracker, None).await?;
                }
                _ = tick.tick() => {
                    let until = crate::clock::now() + chrono_duration(self.config.lease);
                    if !self
                        .deps
                        .store
                        .renew_lease(op.id, lease_token(op), until)
                        .await
                        .unwrap_or(false)
                    {
                        return Err(Stop::LostLease);
                    }
                    self.flush(op, tracker, None).await?;
                }
            }
        }
    }

    async fn sleep_holding_lease(&self, op: &Operation, pause: Duration) -> Result<(), Stop> {
        let end = tokio::time::Instant::now() + pause;
        loop {
            let now = tokio::time::Instant::now();
            if now >= end {
                return Ok(());
            }
            tokio::time::sleep((end - now).min(self.config.lease / 3)).await;
            let until = crate::clock::now() + chrono_duration(self.config.lease);
            if !self
                .deps
                .store
                .renew_lease(op.id, lease_token(op), until)
                .await
                .unwrap_or(false)
            {
                return Err(Stop::LostLease);
            }
        }
    }

    async fn flush(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        checkpoint: Option<&serde_json::Value>,
    ) -> Result<(), Stop> {
        if !tracker.dirty && checkpoint.is_none() {
            return Ok(());
        }
        let events = std::mem::take(&mut tracker.events);
        let saved = match checkpoint {
            Some(c) => c.clone(),
            None => tracker.checkpoint.clone(),
        };
        let ok = self
            .save_progress(op, &tracker.step, tracker.progress, &saved, &events)
            .await;
        match ok {
            Ok(true) => {
                tracker.dirty = false;
                tracker.checkpoint = saved;
                Ok(())
            }
            Ok(false) => Err(Stop::LostLease),
            Err(e) => {
                // The database is unavailable: keep the events for the next flush.
                tracing::warn!(error = %e, "saving operation progress failed");
                tracker.events = events;
                Ok(())
            }
        }
    }

    async fn record(&self, op: &Operation, kind: EventKind, message: String) -> Result<(), Stop> {
        let event = ClusterEvent::new(
            op.cluster_id,
            Some(op.id),
            kind,
            message,
            crate::clock::now(),
        );
        let ok = self
            .save_progress(op, &op.step, op.progress, &op.checkpoint, &[event])
            .await;
        match ok {
            Ok(false) => Err(Stop::LostLease),
            _ => Ok(()),
        }
    }

    /// Saves a running operation's progress and new timeline entries, fenced by its lease;
    /// false when the lease is lost.
    async fn save_progress(
        &self,
        op: &Operation,
        step: &str,
        progress: u8,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool> {
        let store = &self.deps.store;
        store
            .save_progress(op.id, lease_token(op), step, progress, checkpoint, events)
            .await
    }
}

/// The lease token an operation was claimed with (every write of its run is fenced by it).
fn lease_token(op: &Operation) -> &str {
    op.lease_owner.as_deref().unwrap_or_default()
}

/// A create/delete/scale/upgrade step: done with nothing to hand over, or wait.
fn map_step(s: Step<()>) -> Step<Option<crate::provisioner::Provisioned>> {
    match s {
        Step::Done(()) => Step::Done(None),
        Step::Wait(d) => Step::Wait(d),
    }
}

/// The checks every stored admin kubeconfig passes, whatever its provisioner: it parses, its
/// context, cluster and user are complete, it names no local files, and it holds no
/// credential plugin (which would run a command on this server) unless the provider allows
/// them. The reason never quotes the kubeconfig.
fn check_kubeconfig(
    p: &crate::provisioner::Provisioned,
    allow_exec: bool,
) -> std::result::Result<(), String> {
    let text = std::str::from_utf8(p.kubeconfig.expose())
        .map_err(|_| "the provisioner's kubeconfig is not UTF-8 text".to_owned())?;
    crate::kubernetes::parse_kubeconfig(text, None, allow_exec)
        .map(|_| ())
        .map_err(|e| format!("the provisioner's kubeconfig is refused: {e}"))
}

/// Removes a deleted cluster's working directory (installer state, copies of credentials).
async fn remove_work_dir(dir: &std::path::Path) {
    match tokio::fs::remove_dir_all(dir).await {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(error = %e, "removing a deleted cluster's work dir failed"),
    }
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}
