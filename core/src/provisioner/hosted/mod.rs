//! The `hosted` provisioner: KQueen itself runs each cluster's control plane (kube-apiserver,
//! kube-controller-manager and kube-scheduler) against one shared multi-tenant etcd, where
//! every control plane has its own key space, role and certificate-named user (see
//! [`crate::hosted`]). The tenant's cluster is then its worker nodes alone.
//!
//! Where the control planes run is the provider's `runtime`, one [`Runtime`] each:
//! `process` (the binaries on this host under a supervisor, [`process`]) or `kubernetes` (a
//! Deployment per control plane in an admin cluster, the Kamaji design, [`kubernetes`]).
//!
//! Create goes through phases kept in the checkpoint (every call may be repeated): the key
//! space in etcd, the place the API server is reached at, the PKI (sealed in the vault), the
//! start, and the wait for the rollout and `/readyz`. Upgrade starts again at another
//! version, data kept; delete stops the control plane and removes the key space (every key,
//! the role and the user).

mod checkpoint;
pub mod kubernetes;
mod process;
mod runtime;
mod settings;

pub(crate) use settings::parse_minor;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::{
    Capabilities, Notice, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, SharedStorage, Step,
};
use crate::hosted::dump::{KeySpaceDump, Loaded};
use crate::hosted::etcd::{KeySpace, SharedEtcd};
use crate::hosted::pki::{self, ControlPlanePki, PkiRequest};
use crate::hosted::supervisor::{Backoff, Supervisor};
use crate::ValidationError;
use checkpoint::{Checkpoint, Phase};
use kubernetes::KubernetesRuntime;
use process::ProcessRuntime;
use runtime::{Endpoint, Launch, Rollout, Runtime};

/// The vault slot of a control plane's PKI.
const PKI: &str = "pki";
const ETCD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the runtime may take to say where the API server is reached (a load balancer's
/// address).
const RESERVE_WITHIN: Duration = Duration::from_secs(600);

/// Installation-wide options of the `hosted` provisioner.
#[derive(Debug, Clone, Default)]
pub struct HostedOptions {
    pub backoff: Backoff,
}

/// Runs hosted control planes.
pub struct HostedProvisioner {
    process: ProcessRuntime,
    kubernetes: KubernetesRuntime,
}

impl HostedProvisioner {
    pub fn new(options: HostedOptions) -> Self {
        Self {
            process: ProcessRuntime::new(options.backoff),
            kubernetes: KubernetesRuntime,
        }
    }

    /// The runtime the cluster was created with (kept in its state: an edited provider
    /// does not move running control planes), else the one its provider names.
    fn runtime_kind(&self, ctx: &OpContext) -> Result<settings::Runtime, ProvisionError> {
        match ctx.cluster_state.get("runtime").and_then(|r| r.as_str()) {
            Some(kept) => settings::runtime_named(kept),
            None => settings::runtime(&ctx.provider_config),
        }
        .map_err(failed)
    }

    /// The supervisor of this process's control planes (runtime `process`).
    pub fn supervisor(&self) -> &Supervisor {
        self.process.supervisor()
    }

    /// The [`Runtime`] of [`HostedProvisioner::runtime_kind`].
    fn runtime(&self, ctx: &OpContext) -> Result<&dyn Runtime, ProvisionError> {
        Ok(match self.runtime_kind(ctx)? {
            settings::Runtime::Process => &self.process,
            settings::Runtime::Kubernetes => &self.kubernetes,
        })
    }
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

/// The sealed PKI of the cluster; generated (for these host names) and sealed when `hosts`
/// is given and there is none yet.
async fn cluster_pki(
    ctx: &OpContext,
    hosts: Option<Vec<String>>,
) -> Result<ControlPlanePki, ProvisionError> {
    let vault = ctx
        .cluster_vault
        .as_ref()
        .ok_or_else(|| failed("no vault for this cluster"))?;
    if let Some(sealed) = vault.get(PKI).await? {
        return ControlPlanePki::from_secret(&sealed).map_err(failed);
    }
    let Some(hosts) = hosts else {
        // Never generated later: a new CA would break the stored kubeconfig and joined nodes.
        return Err(failed(
            "the control plane's certificates are not in the vault",
        ));
    };
    let name = format!("{}-{}", ctx.tenant, ctx.cluster_name);
    let made = pki::generate(&PkiRequest::new(&name, hosts)).map_err(failed)?;
    vault.put(PKI, &made.to_secret()).await?;
    Ok(made)
}

/// Where the cluster's API server is reached: from the checkpoint, else the state (a
/// cluster created before the host was kept there: the provider's address).
fn known_endpoint(ctx: &OpContext) -> Result<Option<Endpoint>, ProvisionError> {
    let checkpoint = Checkpoint::of(ctx)?;
    let state = |name: &str| ctx.cluster_state.get(name).filter(|f| !f.is_null());
    let port = checkpoint.port.or_else(|| {
        state("port")
            .and_then(|p| p.as_u64())
            .and_then(|p| u16::try_from(p).ok())
    });
    let Some(port) = port else { return Ok(None) };
    let host = checkpoint
        .host
        .or_else(|| state("host").and_then(|h| h.as_str().map(str::to_owned)));
    let host = match host {
        Some(h) => h,
        None => match settings::address(&ctx.provider_config) {
            Ok(a) => a.to_string(),
            Err(_) => return Ok(None),
        },
    };
    Ok(Some(Endpoint { host, port }))
}

/// Everything a runtime needs to start the cluster's control plane at `version`.
async fn launch(
    ctx: &OpContext,
    version: Option<&str>,
    endpoint: Endpoint,
) -> Result<Launch, ProvisionError> {
    let (version, artifacts) =
        settings::artifacts(&ctx.provider_config, version).map_err(failed)?;
    let key_space = KeySpace::for_cluster(ctx.cluster_id);
    let etcd_client = settings::client_ca(ctx)?
        .client(&key_space.user(), None, 1825)
        .map_err(failed)?;
    Ok(Launch {
        version,
        artifacts,
        pki: cluster_pki(ctx, None).await?,
        etcd_client,
        etcd_server_ca: ctx.setting(settings::ETCD_CA)?.to_owned(),
        etcd_endpoints: settings::etcd_access(ctx)?.endpoints,
        key_space,
        endpoint,
    })
}

/// The admin kubeconfig of the cluster.
fn admin_kubeconfig(
    ctx: &OpContext,
    pki: &ControlPlanePki,
    endpoint: &Endpoint,
) -> crate::vault::Secret {
    let name = format!("{}-{}", ctx.tenant, ctx.cluster_name);
    pki::kubeconfig(&name, &endpoint.url(), &pki.ca.cert_pem, &pki.admin)
}

/// Whether the API server answers `/readyz` with `ok`.
async fn ready(ctx: &OpContext, endpoint: &Endpoint) -> Result<bool, ProvisionError> {
    let pki = cluster_pki(ctx, None).await?;
    let kubeconfig = admin_kubeconfig(ctx, &pki, endpoint);
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

/// The phases of a start (create or upgrade): start, then the rollout and `/readyz`.
async fn start_and_wait(
    runtime: &dyn Runtime,
    ctx: &mut OpContext,
    version: Option<&str>,
) -> Result<Step<()>, ProvisionError> {
    let endpoint = known_endpoint(ctx)?
        .ok_or_else(|| failed("where the cluster's API server is reached is not known"))?;
    let mut checkpoint = Checkpoint::of(ctx)?;
    let phase = checkpoint.phase.unwrap_or(Phase::Start);
    let restart = phase != Phase::Start && runtime.rollout(ctx).await? == Rollout::Lost;
    if phase == Phase::Start || restart {
        let launch = launch(ctx, version, endpoint.clone()).await?;
        runtime.start(ctx, &launch).await?;
        let (major, minor) = launch.version;
        checkpoint = Checkpoint {
            version: Some(format!("{major}.{minor}")),
            host: Some(endpoint.host.clone()),
            port: Some(endpoint.port),
            ..Checkpoint::starting(Phase::Wait)
        };
        ctx.write_checkpoint(&checkpoint);
        ctx.reporter.progress(60);
    }
    match runtime.rollout(ctx).await? {
        Rollout::Complete => {
            if ready(ctx, &endpoint).await? {
                ctx.reporter.log("the API server answers /readyz");
                ctx.reporter.progress(95);
                return Ok(Step::Done(()));
            }
        }
        Rollout::Rolling(why) => {
            // Said once per change, not at every poll.
            if checkpoint.rolling.as_deref() != Some(why.as_str()) {
                ctx.reporter.log(why.clone());
                checkpoint.rolling = Some(why);
                ctx.write_checkpoint(&checkpoint);
            }
        }
        Rollout::Lost => {}
    }
    let within = runtime.ready_within();
    if checkpoint.elapsed() > within.as_secs() as i64 {
        return Err(failed(format!(
            "the API server did not become ready within {} s; {}",
            within.as_secs(),
            runtime.diagnosis(ctx).await
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
            replace_node: false,
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
        settings::artifacts(&ctx.provider_config, version)
            .map_err(|m| ValidationError::new("kubernetes_version", m))?;
        if settings::runtime(&ctx.provider_config) == Ok(settings::Runtime::Kubernetes)
            && ctx.secret(settings::ADMIN_KUBECONFIG).is_err()
        {
            return Err(ValidationError::new(
                "provider",
                "the provider names no admin cluster (its admin_kubeconfig is empty): ask an operator",
            ));
        }
        Ok(())
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

    async fn set_shared_storage_writable(
        &self,
        ctx: &OpContext,
        writable: bool,
    ) -> Result<(), ProvisionError> {
        let etcd = SharedEtcd::connect(&settings::etcd_access(ctx)?, ETCD_TIMEOUT)
            .await
            .map_err(transient)?;
        etcd.set_writable(&KeySpace::for_cluster(ctx.cluster_id), writable)
            .await
            .map_err(transient)
    }

    fn dumps_shared_storage(&self) -> bool {
        true
    }

    async fn dump_shared_storage(&self, ctx: &OpContext) -> Result<KeySpaceDump, ProvisionError> {
        let space = KeySpace::for_cluster(ctx.cluster_id);
        // As the key space's own etcd user (a certificate for a day, like its API server's):
        // etcd refuses it every other tenant's range.
        let mut access = settings::etcd_access(ctx)?;
        access.client = settings::client_ca(ctx)?
            .client(&space.user(), None, 1)
            .map_err(failed)?;
        let etcd = SharedEtcd::connect(&access, ETCD_TIMEOUT)
            .await
            .map_err(transient)?;
        etcd.dump(&space).await.map_err(transient)
    }

    async fn load_shared_storage(
        &self,
        ctx: &OpContext,
        dump: &KeySpaceDump,
    ) -> Result<Loaded, ProvisionError> {
        let etcd = SharedEtcd::connect(&settings::etcd_access(ctx)?, ETCD_TIMEOUT)
            .await
            .map_err(transient)?;
        etcd.load(&KeySpace::for_cluster(ctx.cluster_id), dump)
            .await
            .map_err(transient)
    }

    fn notices(&self) -> Option<tokio::sync::mpsc::Receiver<Notice>> {
        self.process.take_notices()
    }

    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let runtime = self.runtime(ctx)?;
        if Checkpoint::of(ctx)?.phase.is_none() {
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
                .step("Reserving where the API server is reached");
            ctx.write_checkpoint(&Checkpoint::starting(Phase::Reserve));
        }
        let checkpoint = Checkpoint::of(ctx)?;
        if checkpoint.phase == Some(Phase::Reserve) {
            let endpoint = match runtime.reserve(ctx).await? {
                Step::Done(endpoint) => endpoint,
                Step::Wait(after) => {
                    if checkpoint.elapsed() > RESERVE_WITHIN.as_secs() as i64 {
                        return Err(failed(format!(
                            "no address for the API server within {} s; {}",
                            RESERVE_WITHIN.as_secs(),
                            runtime.diagnosis(ctx).await
                        )));
                    }
                    return Ok(Step::Wait(after));
                }
            };
            ctx.reporter.log(format!(
                "the API server will be reached at {}",
                endpoint.url()
            ));
            ctx.reporter
                .step("Generating the control plane's certificates");
            let mut hosts = vec![endpoint.host.clone()];
            hosts.extend(runtime.extra_names(ctx));
            cluster_pki(ctx, Some(hosts)).await?;
            ctx.write_checkpoint(&Checkpoint {
                phase: Some(Phase::Start),
                host: Some(endpoint.host),
                port: Some(endpoint.port),
                ..Checkpoint::default()
            });
            ctx.reporter.progress(40);
        }
        let version = ctx.params.get("kubernetes_version").cloned();
        start_and_wait(runtime, ctx, version.as_deref()).await
    }

    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let endpoint = known_endpoint(ctx)?
            .ok_or_else(|| failed("where the cluster's API server is reached is not known"))?;
        let version = Checkpoint::of(ctx)?.version.unwrap_or_default();
        let pki = cluster_pki(ctx, None).await?;
        Ok(Provisioned {
            kubeconfig: admin_kubeconfig(ctx, &pki, &endpoint),
            endpoint: Some(endpoint.url()),
            state: json!({
                "runtime": self.runtime_kind(ctx)?.name(),
                "host": endpoint.host,
                "port": endpoint.port,
                "version": version,
            }),
        })
    }

    fn resumes(&self) -> bool {
        true
    }

    async fn resume(&self, ctx: &mut OpContext) -> Result<(), ProvisionError> {
        let runtime = self.runtime(ctx)?;
        if !runtime.needs_resume() {
            return Ok(());
        }
        let version = running_version(ctx)?;
        // Outside an operation the checkpoint is null: the endpoint create chose, from the
        // state.
        let endpoint =
            known_endpoint(ctx)?.ok_or_else(|| failed("the cluster's state has no port"))?;
        let launch = launch(ctx, Some(&version), endpoint).await?;
        runtime.resume(ctx, &launch).await
    }

    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let runtime = self.runtime(ctx)?;
        if Checkpoint::of(ctx)?.phase.is_none() {
            ctx.reporter.step("Stopping the control plane");
            ctx.write_checkpoint(&Checkpoint::starting(Phase::Stop));
        }
        if let Step::Wait(after) = runtime.stop(ctx).await? {
            return Ok(Step::Wait(after));
        }
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
        ctx.reporter.progress(100);
        Ok(Step::Done(()))
    }

    async fn upgrade(
        &self,
        ctx: &mut OpContext,
        version: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let runtime = self.runtime(ctx)?;
        if Checkpoint::of(ctx)?.phase.is_none() {
            settings::artifacts(&ctx.provider_config, Some(version)).map_err(failed)?;
            ctx.write_checkpoint(&Checkpoint {
                phase: Some(Phase::Start),
                ..Checkpoint::default()
            });
        }
        start_and_wait(runtime, ctx, Some(version)).await
    }
}

/// For [`super::Registry::builtin`].
pub(super) fn provisioner(options: &HostedOptions) -> Arc<dyn Provisioner> {
    Arc::new(HostedProvisioner::new(options.clone()))
}
