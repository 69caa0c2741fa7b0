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

mod checkpoint;
mod config;
pub(crate) mod context;
mod finish;
mod hooks;
mod node_drain;
mod node_removal;
mod progress;
mod run;
mod tracker;
mod ttl;
mod workload;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cluster::{ClusterEvent, Operation};
use crate::deps::Deps;
use crate::provisioner::Step;
use crate::{Error, Result};

pub use config::EngineConfig;
pub(crate) use context::provider_secrets;
pub use hooks::EngineHooks;

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
        let mut last_rollouts: Option<tokio::time::Instant> = None;
        let mut last_autoscale: Option<tokio::time::Instant> = None;
        // The autoscaler reads clusters, which may be slow: in its own task, one at a time,
        // so that operations are claimed meanwhile.
        let mut autoscaling: Option<tokio::task::JoinHandle<()>> = None;
        // The sweeps run on one replica at a time; operations on all of them.
        let leases =
            crate::periodic::JobLeases::new(self.deps.store.clone(), self.config.owner.clone());
        tracing::info!(owner = %self.config.owner, "operation engine started");
        self.resume_clusters().await;
        loop {
            if *shutdown.borrow() {
                break;
            }
            if last_sweep.is_none_or(|t| t.elapsed() >= self.config.ttl_sweep_interval) {
                last_sweep = Some(tokio::time::Instant::now());
                let every = self.config.ttl_sweep_interval;
                let sweep = leases.run(crate::periodic::Job::Sweeps, every, self.sweep_expired());
                if let Some(swept) = sweep.await {
                    if let Err(e) = swept {
                        tracing::warn!(error = %e, "time-to-live sweep failed");
                    }
                    // In the background: clusters that do not answer must not hold up
                    // operations.
                    self.hooks.sweep_access_soon();
                    self.hooks.run_backup_schedules().await;
                }
            }
            if last_rollouts.is_none_or(|t| t.elapsed() >= self.config.rollout_interval) {
                last_rollouts = Some(tokio::time::Instant::now());
                let every = self.config.rollout_interval;
                leases
                    .run(
                        crate::periodic::Job::Rollouts,
                        every,
                        self.hooks.drive_rollouts(),
                    )
                    .await;
            }
            let idle = autoscaling.as_ref().is_none_or(|t| t.is_finished());
            if idle && last_autoscale.is_none_or(|t| t.elapsed() >= self.config.autoscale_interval)
            {
                last_autoscale = Some(tokio::time::Instant::now());
                let every = self.config.autoscale_interval;
                let (leases, hooks) = (leases.clone(), self.hooks.clone());
                autoscaling = Some(tokio::spawn(async move {
                    leases
                        .run(crate::periodic::Job::Autoscale, every, hooks.autoscale())
                        .await;
                }));
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
        if let Some(task) = autoscaling {
            task.abort();
            let _ = task.await;
        }
        leases.release_all().await;
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
        let cluster = match self.deps.store.cluster(op.cluster_id).await {
            Ok(c) => c,
            Err(e) => {
                return self
                    .fail(&op, &format!("the cluster cannot be read: {e}"))
                    .await
            }
        };
        tracing::info!(operation = %op.id, cluster = %cluster.name, kind = %op.kind, attempt = op.attempts, "executing operation");
        if op.kind.is_workload() {
            self.execute_workload(op, cluster).await
        } else {
            self.execute_provisioner(op, cluster).await
        }
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
