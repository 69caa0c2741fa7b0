//! Provisioners: the plug-ins that build and delete clusters. KQueen never installs
//! Kubernetes itself; a provisioner does (import of an existing cluster, an installer command,
//! a Jenkins job…) and hands back a kubeconfig.
//!
//! Each provisioner declares what it can do ([`Capabilities`]) and what it takes (two
//! [`ParamSchema`]s: the settings of a provider of this kind, and the parameters of a cluster
//! request). The engine ([`crate::engine`]) drives it through durable operations: every method
//! that acts is called again after a restart, so it must be idempotent, and long work is split
//! into short calls that return [`Step::Wait`] with a checkpoint in [`OpContext::checkpoint`]
//! (persisted by the engine between calls).

pub mod cluster_api;
pub mod command;
pub mod hosted;
pub mod import;
pub mod jenkins;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::vault::Secret;

// The parameter schema and the kinds are domain types (templates and clusters hold them);
// provisioners use them from here as before.
pub use crate::cluster::params as schema;
pub use crate::cluster::ProviderKind;
pub use schema::{ParamKind, ParamOverride, ParamSchema, ParamSpec, Params};

/// What a provisioner can do besides create and delete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Change the number of nodes (`node_count`).
    pub scale: bool,
    /// Change the Kubernetes version (`kubernetes_version`).
    pub upgrade: bool,
    /// Delete removes the cluster's machines (false: KQueen only forgets the cluster).
    pub deletes_infrastructure: bool,
    /// Replace the machine of a dead (NotReady) node ([`Provisioner::replace_node`]).
    #[serde(default)]
    pub replace_node: bool,
}

/// What a provisioner hands back once a cluster exists.
#[derive(Clone)]
pub struct Provisioned {
    /// The admin kubeconfig (YAML). Stored in the vault, never logged.
    pub kubeconfig: Secret,
    /// The API server URL, when the provisioner knows it (else read from the kubeconfig).
    pub endpoint: Option<String>,
    /// Facts to keep with the cluster for later operations (a build URL, a state directory).
    pub state: serde_json::Value,
}

impl fmt::Debug for Provisioned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provisioned")
            .field("kubeconfig", &self.kubeconfig)
            .field("endpoint", &self.endpoint)
            .field("state", &self.state)
            .finish()
    }
}

/// The answer of one call: finished, or call again after a pause.
#[derive(Debug)]
pub enum Step<T> {
    Done(T),
    /// Not finished yet: the engine persists the checkpoint and progress, and calls again.
    Wait(Duration),
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvisionError {
    /// Permanent: the operation fails and the cluster goes to Error with this reason.
    #[error("{0}")]
    Failed(String),
    /// Worth retrying (network trouble): the engine retries with back-off, up to a limit.
    #[error("{0}")]
    Transient(String),
    /// The provisioner cannot do this (no such capability).
    #[error("this provisioner cannot {0}")]
    Unsupported(&'static str),
}

/// What a cluster keeps in a store KQueen shares between clusters (a hosted control plane's
/// key space in the shared etcd), and whether it may write there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedStorage {
    pub keys: u64,
    /// Keys plus values.
    pub bytes: u64,
    pub writable: bool,
}

/// A [`SharedStorage`] measurement and when it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedStorageReading {
    pub usage: SharedStorage,
    pub measured_at: chrono::DateTime<chrono::Utc>,
}

/// Something that happened to a cluster outside any operation (a hosted control plane's
/// process died and was restarted), for the cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub cluster_id: Uuid,
    pub kind: crate::cluster::EventKind,
    pub message: String,
}

/// A cluster that exists in a provider's infrastructure without KQueen having created it,
/// which an operator may adopt (see [`Provisioner::discover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// What names it to the provisioner (a Cluster API cluster's `namespace/name`).
    pub reference: String,
    pub name: String,
    /// Where it lives in the provider's infrastructure (a namespace), if anywhere.
    pub location: String,
    /// What it is built from (a ClusterClass), if known.
    pub class: Option<String>,
    pub kubernetes_version: Option<String>,
    /// As its provisioner words it (a Cluster API phase).
    pub phase: Option<String>,
    /// Its control plane is available, as its provisioner reports it.
    pub ready: bool,
    pub control_plane_nodes: Option<u32>,
    pub worker_nodes: Option<u32>,
    /// The KQueen cluster it already belongs to.
    pub adopted_by: Option<Uuid>,
}

/// A progress report from a running call; the engine records it in the cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A new step started (shown in the step list).
    Step(String),
    /// Percent done, 0-100 (the progress bar).
    Progress(u8),
    /// A line of output (installer stdout/stderr, Jenkins console).
    Log(String),
}

/// Sends [`Report`]s from a provisioner to the engine. Never blocks; dropped reports are lost
/// only when the engine is gone.
#[derive(Clone, Debug)]
pub struct Reporter(Option<mpsc::UnboundedSender<Report>>);

impl Reporter {
    pub fn new(tx: mpsc::UnboundedSender<Report>) -> Self {
        Self(Some(tx))
    }

    /// A reporter that discards everything (tests, validation calls).
    pub fn discard() -> Self {
        Self(None)
    }

    pub fn step(&self, name: impl Into<String>) {
        self.send(Report::Step(name.into()));
    }

    pub fn progress(&self, percent: u8) {
        self.send(Report::Progress(percent.min(100)));
    }

    pub fn log(&self, line: impl Into<String>) {
        self.send(Report::Log(line.into()));
    }

    fn send(&self, r: Report) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(r);
        }
    }
}

/// Everything a provisioner call may use.
#[derive(Debug, Clone)]
pub struct OpContext {
    pub operation_id: Uuid,
    pub cluster_id: Uuid,
    pub cluster_name: String,
    pub tenant: String,
    /// Validated cluster parameters (template defaults and fixed values applied).
    pub params: Params,
    /// The provider's settings (non-secret fields of its schema).
    pub provider_config: Params,
    /// The provider's secret settings, decrypted from the vault (by field name).
    pub provider_secrets: BTreeMap<String, Secret>,
    /// Secret cluster parameters (an uploaded kubeconfig), decrypted from the vault.
    pub param_secrets: BTreeMap<String, Secret>,
    /// What create returned in [`Provisioned::state`] (for delete, scale, upgrade).
    pub cluster_state: serde_json::Value,
    /// Delete only: this provisioner's checkpoint of the cluster's last create operation when
    /// that create did not succeed (it failed, timed out, or this delete cancelled it), so
    /// the delete can stop what the create started (a queued or running build). Null otherwise.
    pub create_checkpoint: serde_json::Value,
    /// Delete, scale, upgrade: the cluster's stored admin kubeconfig, from the vault.
    pub admin_kubeconfig: Option<Secret>,
    /// Free-form progress of this operation, persisted by the engine after every call.
    pub checkpoint: serde_json::Value,
    /// A working directory that survives restarts (under the data dir), one per cluster.
    pub work_dir: std::path::PathBuf,
    /// The cluster's own vault slots for this provisioner (see
    /// [`Provisioner::cluster_secret_names`]); None outside an operation.
    pub cluster_vault: Option<ClusterVault>,
    pub reporter: Reporter,
}

/// The vault slots a provisioner keeps for one cluster: sealed like every secret, removed
/// when the cluster is.
#[derive(Clone)]
pub struct ClusterVault {
    vault: crate::vault::Vault,
    tenant: Uuid,
    cluster: Uuid,
}

impl fmt::Debug for ClusterVault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterVault")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl ClusterVault {
    pub fn new(vault: crate::vault::Vault, tenant: Uuid, cluster: Uuid) -> Self {
        Self {
            vault,
            tenant,
            cluster,
        }
    }

    fn at(&self, name: &str) -> crate::vault::SecretRef {
        crate::vault::names::cluster_provisioner_secret(self.tenant, self.cluster, name)
    }

    pub async fn put(&self, name: &str, secret: &Secret) -> Result<(), ProvisionError> {
        self.vault
            .put(&self.at(name), secret)
            .await
            .map_err(|e| ProvisionError::Transient(format!("cannot seal '{name}': {e}")))
    }

    pub async fn get(&self, name: &str) -> Result<Option<Secret>, ProvisionError> {
        self.vault
            .get(&self.at(name))
            .await
            .map_err(|e| ProvisionError::Transient(format!("cannot read '{name}': {e}")))
    }
}

impl OpContext {
    /// A provider setting, or a clear error when it is missing.
    pub fn setting(&self, name: &str) -> Result<&str, ProvisionError> {
        self.provider_config
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ProvisionError::Failed(format!("provider setting '{name}' is missing")))
    }

    /// A bare context for calls outside an operation (request checks, tests).
    pub fn new(cluster_name: &str, tenant: &str, work_dir: std::path::PathBuf) -> Self {
        Self {
            operation_id: Uuid::nil(),
            cluster_id: Uuid::nil(),
            cluster_name: cluster_name.into(),
            tenant: tenant.into(),
            params: Params::new(),
            provider_config: Params::new(),
            provider_secrets: BTreeMap::new(),
            param_secrets: BTreeMap::new(),
            cluster_state: serde_json::Value::Null,
            create_checkpoint: serde_json::Value::Null,
            admin_kubeconfig: None,
            checkpoint: serde_json::Value::Null,
            work_dir,
            cluster_vault: None,
            reporter: Reporter::discard(),
        }
    }

    pub fn secret(&self, name: &str) -> Result<&Secret, ProvisionError> {
        self.provider_secrets
            .get(name)
            .ok_or_else(|| ProvisionError::Failed(format!("provider secret '{name}' is missing")))
    }

    /// This operation's checkpoint as the provisioner's own type `T`; `T::default()` while
    /// there is none. One that is not a `T` (written by something else, or edited by hand)
    /// fails the operation naming `whose` it should be, rather than starting over.
    pub fn read_checkpoint<T: serde::de::DeserializeOwned + Default>(
        &self,
        whose: &str,
    ) -> Result<T, ProvisionError> {
        read_checkpoint(&self.checkpoint, whose)
    }

    /// Saves `value` as this operation's checkpoint (the engine persists it after the call).
    pub fn write_checkpoint<T: serde::Serialize>(&mut self, value: &T) {
        // The provisioners' checkpoints are plain structs: serialising them cannot fail.
        if let Ok(v) = serde_json::to_value(value) {
            self.checkpoint = v;
        }
    }
}

/// `value` (a checkpoint) as `T`; `T::default()` when it is null.
pub(crate) fn read_checkpoint<T: serde::de::DeserializeOwned + Default>(
    value: &serde_json::Value,
    whose: &str,
) -> Result<T, ProvisionError> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(value.clone()).map_err(|e| {
        ProvisionError::Failed(format!(
            "the saved progress of this operation is not the {whose} provisioner's ({e})"
        ))
    })
}

/// A provisioner backend. Used as `Arc<dyn Provisioner>` from a [`Registry`].
#[async_trait]
pub trait Provisioner: Send + Sync + 'static {
    fn kind(&self) -> ProviderKind;
    /// What providers of this kind can do at most.
    fn capabilities(&self) -> Capabilities;

    /// What a provider with these settings can do (a command provider without a scale
    /// command cannot scale). Defaults to [`Provisioner::capabilities`].
    fn capabilities_for(&self, _provider_config: &Params) -> Capabilities {
        self.capabilities()
    }

    /// Whether kubeconfigs of a provider with these settings may hold credential plugins
    /// (exec, auth-provider), which run commands on the KQueen server. Checked when a
    /// kubeconfig is stored and every time it is used. Defaults to no.
    fn allows_exec(&self, _provider_config: &Params) -> bool {
        false
    }
    /// The settings of a provider of this kind (secret fields go to the vault).
    fn provider_schema(&self) -> ParamSchema;
    /// The parameters of a cluster request (templates narrow it).
    fn cluster_schema(&self) -> ParamSchema;

    /// Checks a provider's settings beyond the schema (e.g. that a command exists).
    fn check_provider(&self, _config: &Params) -> Result<(), crate::ValidationError> {
        Ok(())
    }

    /// Checks new values of a provider's secret settings (those left unchanged on edit are
    /// not passed). Errors name the field and never quote the value.
    fn check_provider_secrets(&self, _secrets: &Params) -> Result<(), crate::ValidationError> {
        Ok(())
    }

    /// Checks a cluster request before it is accepted (e.g. that an uploaded kubeconfig
    /// parses and its API server answers). Runs inside the request: keep it short.
    async fn check_request(&self, _ctx: &OpContext) -> Result<(), crate::ValidationError> {
        Ok(())
    }

    /// The names of the vault slots it keeps per cluster through [`OpContext::cluster_vault`]
    /// (removed with the cluster).
    fn cluster_secret_names(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Brings a Ready cluster's running parts back after KQueen started (a hosted control
    /// plane's processes: adopted when still running, else started). Called by the engine
    /// at its start for every Ready or Updating cluster of this kind, without an operation
    /// (`ctx.checkpoint` is null). Defaults to nothing: most clusters run without KQueen.
    async fn resume(&self, _ctx: &mut OpContext) -> Result<(), ProvisionError> {
        Ok(())
    }

    /// Whether [`Provisioner::resume`] does anything (the engine skips the others).
    fn resumes(&self) -> bool {
        false
    }

    /// What the cluster keeps in storage shared with other clusters (None: nothing of the
    /// kind). Measured at every inventory sync.
    async fn shared_storage(
        &self,
        _ctx: &OpContext,
    ) -> Result<Option<SharedStorage>, ProvisionError> {
        Ok(None)
    }

    /// Gives the cluster write access to its shared storage back, or takes it away (the
    /// cluster's data stays readable). Called when its tenant's storage quota is exceeded
    /// and again once it is under. Defaults to refusing: only provisioners whose
    /// [`Provisioner::shared_storage`] measures something can do it.
    async fn set_shared_storage_writable(
        &self,
        _ctx: &OpContext,
        _writable: bool,
    ) -> Result<(), ProvisionError> {
        Err(ProvisionError::Failed(
            "this kind of cluster keeps nothing in shared storage".into(),
        ))
    }

    /// Whether its clusters' shared storage can be copied and loaded
    /// ([`Provisioner::dump_shared_storage`], [`Provisioner::load_shared_storage`]).
    fn dumps_shared_storage(&self) -> bool {
        false
    }

    /// A copy of the cluster's shared storage at one revision (a hosted control plane's key
    /// space), read with the cluster's own credentials so that nothing of another cluster can
    /// be read. Defaults to refusing, as [`Provisioner::set_shared_storage_writable`].
    async fn dump_shared_storage(
        &self,
        _ctx: &OpContext,
    ) -> Result<crate::hosted::dump::KeySpaceDump, ProvisionError> {
        Err(ProvisionError::Failed(
            "this kind of cluster keeps nothing in shared storage".into(),
        ))
    }

    /// Makes the cluster's shared storage hold exactly `dump` (taken of it or of another
    /// cluster of the kind). Defaults to refusing.
    async fn load_shared_storage(
        &self,
        _ctx: &OpContext,
        _dump: &crate::hosted::dump::KeySpaceDump,
    ) -> Result<crate::hosted::dump::Loaded, ProvisionError> {
        Err(ProvisionError::Failed(
            "this kind of cluster keeps nothing in shared storage".into(),
        ))
    }

    /// What it will tell about its clusters outside operations, once: the engine takes the
    /// receiver at its start and records each notice in the cluster's timeline.
    fn notices(&self) -> Option<mpsc::Receiver<Notice>> {
        None
    }

    /// Whether its provider's existing clusters can be listed ([`Provisioner::discover`])
    /// and adopted: a create whose cluster state names one (`{"adopt": reference}`) takes
    /// that cluster over instead of building one.
    fn adopts(&self) -> bool {
        false
    }

    /// The clusters that exist in the provider's infrastructure (adopted or not).
    async fn discover(&self, _ctx: &OpContext) -> Result<Vec<Discovered>, ProvisionError> {
        Err(ProvisionError::Unsupported("list existing clusters"))
    }

    /// Builds the cluster; called until it returns `Done`.
    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError>;

    /// The admin kubeconfig of a created cluster.
    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError>;

    /// Called once the kubeconfig from [`Provisioner::kubeconfig`] is sealed in the vault:
    /// remove any plaintext copy the provisioner left (kubeconfigs are encrypted at rest).
    async fn kubeconfig_stored(&self, _ctx: &OpContext) {}

    /// Removes the cluster; called until it returns `Done`.
    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError>;

    /// Changes the node count (when [`Capabilities::scale`]).
    async fn scale(&self, _ctx: &mut OpContext, _nodes: u32) -> Result<Step<()>, ProvisionError> {
        Err(ProvisionError::Unsupported("scale"))
    }

    /// Lowers the node count to `nodes` by removing node `node`, which KQueen has drained
    /// (the autoscaler's scale-down; when [`Capabilities::scale`]): the provisioner removes
    /// that node's machine and no other. `Done` once it is gone; KQueen then deletes its Node
    /// object if it is still there. Every provisioner that scales implements it.
    async fn scale_down(
        &self,
        _ctx: &mut OpContext,
        _nodes: u32,
        _node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        Err(ProvisionError::Unsupported("remove a chosen node"))
    }

    /// Replaces the machine of node `node`, which is NotReady and which KQueen has already
    /// removed from the cluster (when [`Capabilities::replace_node`]); `Done` once the new
    /// machine is there, as far as the provisioner can tell.
    async fn replace_node(
        &self,
        _ctx: &mut OpContext,
        _node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        Err(ProvisionError::Unsupported("replace a node"))
    }

    /// Changes the Kubernetes version (when [`Capabilities::upgrade`]).
    async fn upgrade(
        &self,
        _ctx: &mut OpContext,
        _version: &str,
    ) -> Result<Step<()>, ProvisionError> {
        Err(ProvisionError::Unsupported("upgrade"))
    }
}

/// The provisioners available in this process, by kind.
#[derive(Clone, Default)]
pub struct Registry {
    by_kind: BTreeMap<ProviderKind, Arc<dyn Provisioner>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in provisioners with the given options.
    pub fn builtin(options: &RegistryOptions) -> Self {
        let mut r = Self::new();
        r.register(Arc::new(import::ImportProvisioner::new(
            options.import.clone(),
        )));
        r.register(Arc::new(command::CommandProvisioner::new(
            options.command.clone(),
        )));
        r.register(Arc::new(jenkins::JenkinsProvisioner::new(
            options.jenkins.clone(),
        )));
        r.register(hosted::provisioner(&options.hosted));
        r.register(Arc::new(cluster_api::ClusterApiProvisioner::new(
            options.cluster_api.clone(),
        )));
        r
    }

    /// Adds or replaces the provisioner of its kind.
    pub fn register(&mut self, p: Arc<dyn Provisioner>) {
        self.by_kind.insert(p.kind(), p);
    }

    pub fn get(&self, kind: ProviderKind) -> Option<Arc<dyn Provisioner>> {
        self.by_kind.get(&kind).cloned()
    }

    pub fn kinds(&self) -> impl Iterator<Item = ProviderKind> + '_ {
        self.by_kind.keys().copied()
    }
}

/// Installation-wide switches of the built-in provisioners.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    pub import: import::ImportOptions,
    pub command: command::CommandOptions,
    pub jenkins: jenkins::JenkinsOptions,
    pub hosted: hosted::HostedOptions,
    pub cluster_api: cluster_api::ClusterApiOptions,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{OpContext, ProvisionError};

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Mine {
        #[serde(default)]
        done: bool,
    }

    #[test]
    fn a_checkpoint_reads_as_its_provisioners_type_or_fails_naming_it() {
        let mut ctx = OpContext::new("dev", "team-a", std::env::temp_dir());
        assert_eq!(ctx.read_checkpoint::<Mine>("lab").unwrap(), Mine::default());
        ctx.write_checkpoint(&Mine { done: true });
        assert_eq!(ctx.checkpoint, serde_json::json!({"done": true}));
        assert_eq!(
            ctx.read_checkpoint::<Mine>("lab").unwrap(),
            Mine { done: true }
        );
        ctx.checkpoint = serde_json::json!({"done": "yes"});
        match ctx.read_checkpoint::<Mine>("lab") {
            Err(ProvisionError::Failed(why)) => {
                assert!(why.contains("not the lab provisioner's"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }
}
