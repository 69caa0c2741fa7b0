//! Runtime `process`: the configured binaries run on this host under the [`Supervisor`],
//! each control plane on its own port of the configured address. The files the processes
//! read are written (mode 0600) into the cluster's working directory from the vault.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use super::runtime::{Endpoint, Launch, Rollout, Runtime};
use super::{failed, settings, transient};
use crate::hosted::control_plane::{ControlPlaneFiles, ControlPlaneSpec};
use crate::hosted::supervisor::{Backoff, ProcessSpec, Supervisor, SupervisorEvent};
use crate::provisioner::{Notice, OpContext, ProvisionError, Step};

const PROCESSES: [&str; 3] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

/// Notices waiting for the engine; more are dropped (and logged) rather than kept.
const NOTICE_BACKLOG: usize = 1024;

/// Runs control planes as supervised processes of this host.
pub(super) struct ProcessRuntime {
    supervisor: Supervisor,
    /// Supervisor events until a task turns them into notices (started with the first use,
    /// inside the runtime).
    events: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<SupervisorEvent>>>,
    notices_tx: tokio::sync::mpsc::Sender<Notice>,
    notices_rx: Mutex<Option<tokio::sync::mpsc::Receiver<Notice>>>,
}

impl ProcessRuntime {
    pub(super) fn new(backoff: Backoff) -> Self {
        let (supervisor, events) = Supervisor::new(backoff);
        let (notices_tx, notices_rx) = tokio::sync::mpsc::channel(NOTICE_BACKLOG);
        Self {
            supervisor,
            events: Mutex::new(Some(events)),
            notices_tx,
            notices_rx: Mutex::new(Some(notices_rx)),
        }
    }

    pub(super) fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

    /// The receiver of the notices, once.
    pub(super) fn take_notices(&self) -> Option<tokio::sync::mpsc::Receiver<Notice>> {
        lock(&self.notices_rx).take()
    }

    /// Turns supervisor events into notices (from the first call on, inside the runtime).
    fn forward_events(&self) {
        let taken = lock(&self.events).take();
        let Some(mut rx) = taken else {
            return;
        };
        let tx = self.notices_tx.clone();
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                if let SupervisorEvent::Exited {
                    key,
                    name,
                    status,
                    log_tail,
                } = &e
                {
                    tracing::warn!(cluster = %key, process = %name, %status,
                        log = %log_tail, "a hosted control plane process exited");
                } else {
                    tracing::info!(event = ?e, "hosted control plane");
                }
                if let Some(notice) = notice(e) {
                    if tx.try_send(notice).is_err() {
                        tracing::warn!("a hosted control plane notice was dropped (none taken)");
                    }
                }
            }
        });
    }

    /// Writes the control plane's files and (re)starts its processes.
    async fn run(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError> {
        self.forward_events();
        let address = settings::address(&ctx.provider_config).map_err(failed)?;
        let spec = ControlPlaneSpec::on_host(
            launch.etcd_endpoints.clone(),
            launch.key_space.clone(),
            address,
            launch.endpoint.port,
            launch.version,
        );
        let layout = Layout::of(ctx);
        let files = ControlPlaneFiles::write(
            &layout.pki_dir,
            &launch.pki,
            &launch.etcd_server_ca,
            &launch.etcd_client,
            &spec,
        )
        .map_err(|e| transient(format!("cannot write the control plane's files: {e}")))?;
        let artifacts = &launch.artifacts;
        let binaries_and_args = [
            (&artifacts.apiserver, files.apiserver_args(&spec)),
            (
                &artifacts.controller_manager,
                files.controller_manager_args(&spec),
            ),
            (&artifacts.scheduler, files.scheduler_args(&spec)),
        ];
        let specs = PROCESSES
            .into_iter()
            .zip(binaries_and_args)
            .map(|(name, (binary, args))| ProcessSpec {
                name: name.into(),
                binary: PathBuf::from(binary),
                args,
                dir: layout.run_dir.clone(),
                marker: marker(ctx),
            })
            .collect();
        self.supervisor
            .run(&key(ctx), specs)
            .await
            .map_err(|e| transient(format!("cannot start the control plane: {e}")))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A supervisor event as the cluster's timeline shows it.
fn notice(e: SupervisorEvent) -> Option<Notice> {
    use crate::cluster::EventKind;
    let (key, kind, message) = match e {
        SupervisorEvent::Started { key, name, pid } => {
            (key, EventKind::Log, format!("{name} started (pid {pid})"))
        }
        SupervisorEvent::Adopted { key, name, pid } => (
            key,
            EventKind::Log,
            format!("{name} still runs after a restart of KQueen (pid {pid}): adopted"),
        ),
        SupervisorEvent::Exited {
            key,
            name,
            status,
            log_tail,
        } => (
            key,
            EventKind::Error,
            if log_tail.is_empty() {
                format!("{name} {status}")
            } else {
                format!("{name} {status}; its log ends:\n{log_tail}")
            },
        ),
        SupervisorEvent::Restarting { key, name, after } => (
            key,
            EventKind::Log,
            format!("{name} restarts in {:.1} s", after.as_secs_f64()),
        ),
        SupervisorEvent::Stopped { key, name } => (key, EventKind::Log, format!("{name} stopped")),
    };
    Some(Notice {
        cluster_id: key.parse().ok()?,
        kind,
        message,
    })
}

/// Where one cluster's control plane lives on this host.
struct Layout {
    pki_dir: PathBuf,
    run_dir: PathBuf,
}

impl Layout {
    fn of(ctx: &OpContext) -> Self {
        Self {
            pki_dir: ctx.work_dir.join("pki"),
            run_dir: ctx.work_dir.join("run"),
        }
    }
}

fn key(ctx: &OpContext) -> String {
    ctx.cluster_id.to_string()
}

/// What only this cluster's processes have on their command lines: its own directory.
fn marker(ctx: &OpContext) -> String {
    ctx.work_dir.display().to_string()
}

/// The port the cluster's API server was given: from the checkpoint, else the state.
fn known_port(ctx: &OpContext) -> Result<Option<u16>, ProvisionError> {
    let state = || {
        ctx.cluster_state
            .get("port")
            .and_then(serde_json::Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
    };
    Ok(super::Checkpoint::of(ctx)?.port.or_else(state))
}

#[async_trait]
impl Runtime for ProcessRuntime {
    /// The configured address and the port the cluster was given, else a free one.
    async fn reserve(&self, ctx: &OpContext) -> Result<Step<Endpoint>, ProvisionError> {
        let address = settings::address(&ctx.provider_config).map_err(failed)?;
        let port = match known_port(ctx)? {
            Some(p) => p,
            None => std::net::TcpListener::bind((address, 0))
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .map_err(|e| failed(format!("no free port on {address}: {e}")))?,
        };
        Ok(Step::Done(Endpoint {
            host: address.to_string(),
            port,
        }))
    }

    fn extra_names(&self, _ctx: &OpContext) -> Vec<String> {
        Vec::new()
    }

    async fn start(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError> {
        ctx.reporter.step(format!(
            "Starting kube-apiserver, kube-controller-manager and kube-scheduler on port {}",
            launch.endpoint.port
        ));
        self.run(ctx, launch).await
    }

    async fn rollout(&self, ctx: &OpContext) -> Result<Rollout, ProvisionError> {
        Ok(if self.supervisor.pids(&key(ctx)).is_empty() {
            Rollout::Lost
        } else {
            Rollout::Complete
        })
    }

    fn ready_within(&self) -> Duration {
        Duration::from_secs(120)
    }

    /// The end of the API server's log.
    async fn diagnosis(&self, ctx: &OpContext) -> String {
        let log = std::fs::read_to_string(Layout::of(ctx).run_dir.join("kube-apiserver.log"))
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
        format!("its log ends:\n{tail}")
    }

    fn needs_resume(&self) -> bool {
        true
    }

    /// Adopts the control plane's processes when they still run, else starts them again
    /// (the data is in etcd; the files are written again from the vault).
    async fn resume(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError> {
        self.run(ctx, launch).await
    }

    async fn stop(&self, ctx: &OpContext) -> Result<Step<()>, ProvisionError> {
        self.supervisor.stop(&key(ctx)).await;
        // Also what this supervisor does not hold (started by another KQueen process).
        let run_dir = Layout::of(ctx).run_dir;
        let leftovers: Vec<ProcessSpec> = PROCESSES
            .into_iter()
            .map(|name| ProcessSpec {
                name: name.into(),
                binary: PathBuf::new(),
                args: Vec::new(),
                dir: run_dir.clone(),
                marker: marker(ctx),
            })
            .collect();
        self.supervisor.stop_unsupervised(&leftovers).await;
        let layout = Layout::of(ctx);
        for dir in [layout.pki_dir, layout.run_dir] {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(transient(format!("cannot remove {}: {e}", dir.display())));
                }
            }
        }
        Ok(Step::Done(()))
    }
}
