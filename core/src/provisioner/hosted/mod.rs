//! The `hosted` provisioner: KQueen itself runs each cluster's control plane (kube-apiserver
//! and kube-controller-manager) against one shared multi-tenant etcd, where every control
//! plane has its own key space, role and certificate-named user (see [`crate::hosted`]). The
//! tenant's cluster is then its worker nodes alone.
//!
//! Runtime `process`: the configured binaries run on this host under the [`Supervisor`],
//! each control plane on its own port of the configured address. The PKI is sealed in the
//! vault; the files the processes read are written (mode 0600) into the cluster's working
//! directory.
//!
//! Create goes through phases kept in the checkpoint (every call may be repeated): the key
//! space in etcd, the PKI, the processes, and the wait for `/readyz`. Upgrade restarts with
//! another version's binaries, data kept; delete stops the processes and removes the key
//! space (every key, the role and the user).

mod settings;

pub(crate) use settings::parse_minor;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::{
    Capabilities, Notice, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, SharedStorage, Step,
};
use crate::hosted::control_plane::{ControlPlaneFiles, ControlPlaneSpec};
use crate::hosted::etcd::{KeySpace, SharedEtcd};
use crate::hosted::pki::{self, ControlPlanePki, PkiRequest};
use crate::hosted::supervisor::{Backoff, ProcessSpec, Supervisor, SupervisorEvent};
use crate::ValidationError;

/// The vault slot of a control plane's PKI.
const PKI: &str = "pki";
/// How long a control plane may take to answer `/readyz` after its processes start.
const READY_WITHIN: Duration = Duration::from_secs(120);
const ETCD_TIMEOUT: Duration = Duration::from_secs(10);

/// Installation-wide options of the `hosted` provisioner.
#[derive(Debug, Clone, Default)]
pub struct HostedOptions {
    pub backoff: Backoff,
}

/// Runs hosted control planes.
pub struct HostedProvisioner {
    supervisor: Supervisor,
    /// Supervisor events until a task turns them into notices (started with the first use,
    /// inside the runtime).
    events: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<SupervisorEvent>>>,
    notices_tx: tokio::sync::mpsc::Sender<Notice>,
    notices_rx: Mutex<Option<tokio::sync::mpsc::Receiver<Notice>>>,
}

/// Notices waiting for the engine; more are dropped (and logged) rather than kept.
const NOTICE_BACKLOG: usize = 1024;

impl HostedProvisioner {
    pub fn new(options: HostedOptions) -> Self {
        let (supervisor, events) = Supervisor::new(options.backoff);
        let (notices_tx, notices_rx) = tokio::sync::mpsc::channel(NOTICE_BACKLOG);
        Self {
            supervisor,
            events: Mutex::new(Some(events)),
            notices_tx,
            notices_rx: Mutex::new(Some(notices_rx)),
        }
    }

    /// The supervisor of this process's control planes.
    pub fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

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

/// The version the cluster runs: its parameter, else what create chose (the newest offered
/// then), never "the newest now" (that would upgrade it behind the tenant's back).
fn running_version(ctx: &OpContext) -> Result<String, ProvisionError> {
    ctx.params
        .get("kubernetes_version")
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            ctx.cluster_state
                .get("version")
                .and_then(|v| v.as_str())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        })
        .ok_or_else(|| failed("the cluster's Kubernetes version is not known"))
}

fn failed(e: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Failed(e.to_string())
}

fn transient(e: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Transient(e.to_string())
}

/// The sealed PKI of the cluster, generated and sealed on first use.
async fn cluster_pki(ctx: &OpContext, generate: bool) -> Result<ControlPlanePki, ProvisionError> {
    let vault = ctx
        .cluster_vault
        .as_ref()
        .ok_or_else(|| failed("no vault for this cluster"))?;
    if let Some(sealed) = vault.get(PKI).await? {
        return ControlPlanePki::from_secret(&sealed).map_err(failed);
    }
    if !generate {
        return Err(failed(
            "the control plane's certificates are not in the vault",
        ));
    }
    let address = settings::address(&ctx.provider_config).map_err(failed)?;
    let name = format!("{}-{}", ctx.tenant, ctx.cluster_name);
    let made = pki::generate(&PkiRequest::new(&name, vec![address.to_string()])).map_err(failed)?;
    vault.put(PKI, &made.to_secret()).await?;
    Ok(made)
}

/// The port the cluster's API server was given: from the checkpoint, else the state.
fn known_port(ctx: &OpContext) -> Option<u16> {
    [&ctx.checkpoint, &ctx.cluster_state]
        .into_iter()
        .find_map(|v| v.get("port").and_then(serde_json::Value::as_u64))
        .and_then(|p| u16::try_from(p).ok())
}

/// The port of the cluster's API server: the one it was given, else a free one.
fn port(ctx: &OpContext) -> Result<u16, ProvisionError> {
    if let Some(p) = known_port(ctx) {
        return Ok(p);
    }
    let address = settings::address(&ctx.provider_config).map_err(failed)?;
    std::net::TcpListener::bind((address, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| failed(format!("no free port on {address}: {e}")))
}

/// Writes the control plane's files and (re)starts its processes at `version`.
async fn start(
    sup: &Supervisor,
    ctx: &OpContext,
    version: Option<&str>,
    port: u16,
) -> Result<(u32, u32), ProvisionError> {
    let (version, binaries) = settings::binaries(&ctx.provider_config, version).map_err(failed)?;
    // Never generated here: a new CA would break the stored kubeconfig and joined nodes.
    let pki = cluster_pki(ctx, false).await?;
    let space = KeySpace::for_cluster(ctx.cluster_id);
    let etcd_cert = settings::client_ca(ctx)?
        .client(&space.user(), None, 1825)
        .map_err(failed)?;
    let spec = ControlPlaneSpec {
        etcd_endpoints: settings::etcd_access(ctx)?.endpoints,
        key_space: space,
        address: settings::address(&ctx.provider_config).map_err(failed)?,
        port,
        service_cidr: "10.96.0.0/12".into(),
        version,
    };
    let layout = Layout::of(ctx);
    let files = ControlPlaneFiles::write(
        &layout.pki_dir,
        &pki,
        ctx.setting(settings::ETCD_CA)?,
        &etcd_cert,
        &spec,
    )
    .map_err(|e| transient(format!("cannot write the control plane's files: {e}")))?;
    let specs = vec![
        ProcessSpec {
            name: "kube-apiserver".into(),
            binary: binaries.apiserver,
            args: files.apiserver_args(&spec),
            dir: layout.run_dir.clone(),
            marker: marker(ctx),
        },
        ProcessSpec {
            name: "kube-controller-manager".into(),
            binary: binaries.controller_manager,
            args: files.controller_manager_args(&spec),
            dir: layout.run_dir,
            marker: marker(ctx),
        },
    ];
    sup.run(&key(ctx), specs)
        .await
        .map_err(|e| transient(format!("cannot start the control plane: {e}")))?;
    Ok(version)
}

/// The admin kubeconfig of the cluster.
fn admin_kubeconfig(
    ctx: &OpContext,
    pki: &ControlPlanePki,
    port: u16,
) -> Result<(crate::vault::Secret, String), ProvisionError> {
    let address = settings::address(&ctx.provider_config).map_err(failed)?;
    let endpoint = crate::hosted::control_plane::endpoint(address, port);
    let name = format!("{}-{}", ctx.tenant, ctx.cluster_name);
    Ok((
        pki::kubeconfig(&name, &endpoint, &pki.ca.cert_pem, &pki.admin),
        endpoint,
    ))
}

/// Whether the API server answers `/readyz` with `ok`.
async fn ready(ctx: &OpContext, port: u16) -> Result<bool, ProvisionError> {
    let pki = cluster_pki(ctx, false).await?;
    let (kubeconfig, _) = admin_kubeconfig(ctx, &pki, port)?;
    let text = std::str::from_utf8(kubeconfig.expose()).map_err(failed)?;
    let parsed =
        crate::kubernetes::parse_kubeconfig(text, None, false).map_err(|e| failed(e.message))?;
    let Ok(client) = crate::kubernetes::client(&parsed, Duration::from_secs(3)).await else {
        return Ok(false);
    };
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return Ok(false);
    };
    Ok(client
        .request_text(request)
        .await
        .is_ok_and(|t| t.trim() == "ok"))
}

/// The phases of a start (create or upgrade): processes, then `/readyz`.
async fn start_and_wait(
    sup: &Supervisor,
    ctx: &mut OpContext,
    version: Option<&str>,
) -> Result<Step<()>, ProvisionError> {
    let port = port(ctx)?;
    let phase = ctx
        .checkpoint
        .get("phase")
        .and_then(|p| p.as_str())
        .unwrap_or("start")
        .to_owned();
    if phase == "start" || sup.pids(&key(ctx)).is_empty() {
        ctx.reporter.step(format!(
            "Starting kube-apiserver and kube-controller-manager on port {port}"
        ));
        let (major, minor) = start(sup, ctx, version, port).await?;
        ctx.checkpoint["version"] = json!(format!("{major}.{minor}"));
        ctx.checkpoint["phase"] = json!("wait");
        ctx.checkpoint["since"] = json!(crate::clock::now().timestamp());
        ctx.reporter.progress(60);
    }
    if ready(ctx, port).await? {
        ctx.reporter.log("the API server answers /readyz");
        ctx.reporter.progress(95);
        return Ok(Step::Done(()));
    }
    let since = ctx.checkpoint["since"].as_i64().unwrap_or_default();
    let waited = crate::clock::now().timestamp() - since;
    if waited > READY_WITHIN.as_secs() as i64 {
        let log = std::fs::read_to_string(Layout::of(ctx).run_dir.join("kube-apiserver.log"))
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        return Err(failed(format!(
            "the API server did not become ready within {} s; its log ends:\n{}",
            READY_WITHIN.as_secs(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )));
    }
    Ok(Step::Wait(Duration::from_secs(1)))
}

#[async_trait]
impl Provisioner for HostedProvisioner {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Hosted
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            scale: false,
            upgrade: true,
            deletes_infrastructure: true,
        }
    }

    fn provider_schema(&self) -> ParamSchema {
        settings::provider_schema()
    }

    fn cluster_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![ParamSpec::new(
            "kubernetes_version",
            "Kubernetes version",
            ParamKind::String {
                default: None,
                max_len: 20,
            },
        )
        .help("one the provider offers; empty: the newest")])
    }

    fn check_provider(&self, config: &Params) -> Result<(), ValidationError> {
        settings::check_provider(config)
    }

    fn check_provider_secrets(&self, secrets: &Params) -> Result<(), ValidationError> {
        settings::check_secrets(secrets)
    }

    async fn check_request(&self, ctx: &OpContext) -> Result<(), ValidationError> {
        let version = ctx.params.get("kubernetes_version").map(String::as_str);
        settings::binaries(&ctx.provider_config, version)
            .map(drop)
            .map_err(|m| ValidationError::new("kubernetes_version", m))
    }

    fn cluster_secret_names(&self) -> Vec<&'static str> {
        vec![PKI]
    }

    async fn shared_storage(
        &self,
        ctx: &OpContext,
    ) -> Result<Option<SharedStorage>, ProvisionError> {
        let etcd = SharedEtcd::connect(&settings::etcd_access(ctx)?, ETCD_TIMEOUT)
            .await
            .map_err(transient)?;
        let space = KeySpace::for_cluster(ctx.cluster_id);
        let usage = etcd.usage(&space).await.map_err(transient)?;
        let writable = etcd.writable(&space).await.map_err(transient)?;
        Ok(Some(SharedStorage {
            keys: usage.keys,
            bytes: usage.bytes,
            writable: writable.unwrap_or(false),
        }))
    }

    fn notices(&self) -> Option<tokio::sync::mpsc::Receiver<Notice>> {
        lock(&self.notices_rx).take()
    }

    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        self.forward_events();
        if ctx.checkpoint.get("phase").is_none() {
            ctx.reporter
                .step("Reserving the key space, role and user in the shared etcd");
            let etcd = SharedEtcd::connect(&settings::etcd_access(ctx)?, ETCD_TIMEOUT)
                .await
                .map_err(transient)?;
            etcd.open(&KeySpace::for_cluster(ctx.cluster_id))
                .await
                .map_err(transient)?;
            ctx.reporter.progress(20);
            ctx.reporter
                .step("Generating the control plane's certificates");
            cluster_pki(ctx, true).await?;
            let port = port(ctx)?;
            ctx.checkpoint = json!({"phase": "start", "port": port});
            ctx.reporter.progress(40);
        }
        let version = ctx.params.get("kubernetes_version").cloned();
        start_and_wait(&self.supervisor, ctx, version.as_deref()).await
    }

    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let port = port(ctx)?;
        let pki = cluster_pki(ctx, false).await?;
        let (kubeconfig, endpoint) = admin_kubeconfig(ctx, &pki, port)?;
        Ok(Provisioned {
            kubeconfig,
            endpoint: Some(endpoint),
            state: json!({
                "port": port,
                "version": ctx.checkpoint.get("version").cloned().unwrap_or_default(),
            }),
        })
    }

    fn resumes(&self) -> bool {
        true
    }

    /// Adopts the control plane's processes when they still run, else starts them again
    /// (the data is in etcd; the files are written again from the vault).
    async fn resume(&self, ctx: &mut OpContext) -> Result<(), ProvisionError> {
        self.forward_events();
        let version = Some(running_version(ctx)?);
        // Outside an operation the checkpoint is null: the port create chose, from the state.
        let port = known_port(ctx).ok_or_else(|| failed("the cluster's state has no port"))?;
        start(&self.supervisor, ctx, version.as_deref(), port).await?;
        Ok(())
    }

    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        ctx.reporter.step("Stopping the control plane");
        self.supervisor.stop(&key(ctx)).await;
        // Also what this supervisor does not hold (started by another KQueen process).
        let run_dir = Layout::of(ctx).run_dir;
        let leftovers: Vec<ProcessSpec> = ["kube-apiserver", "kube-controller-manager"]
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
        ctx.reporter.progress(40);
        ctx.reporter
            .step("Removing the key space, role and user from the shared etcd");
        let etcd = SharedEtcd::connect(&settings::etcd_access(ctx)?, ETCD_TIMEOUT)
            .await
            .map_err(transient)?;
        let removed = etcd
            .remove(&KeySpace::for_cluster(ctx.cluster_id))
            .await
            .map_err(transient)?;
        ctx.reporter
            .log(format!("removed {removed} key(s) from the shared etcd"));
        let layout = Layout::of(ctx);
        for dir in [layout.pki_dir, layout.run_dir] {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(transient(format!("cannot remove {}: {e}", dir.display())));
                }
            }
        }
        ctx.reporter.progress(100);
        Ok(Step::Done(()))
    }

    async fn upgrade(
        &self,
        ctx: &mut OpContext,
        version: &str,
    ) -> Result<Step<()>, ProvisionError> {
        self.forward_events();
        if ctx.checkpoint.get("phase").is_none() {
            settings::binaries(&ctx.provider_config, Some(version)).map_err(failed)?;
            ctx.checkpoint = json!({"phase": "start"});
        }
        start_and_wait(&self.supervisor, ctx, Some(version)).await
    }
}

/// For [`super::Registry::builtin`].
pub(super) fn provisioner(options: &HostedOptions) -> Arc<dyn Provisioner> {
    Arc::new(HostedProvisioner::new(options.clone()))
}
