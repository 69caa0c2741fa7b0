//! What a hosted control plane's runtime does, whichever it is: reserve the place its API
//! server is reached at, start (or move to another version) the control plane, follow its
//! rollout, bring it back after KQueen restarted, and stop it.

use std::time::Duration;

use async_trait::async_trait;

use super::settings::Artifacts;
use crate::hosted::etcd::KeySpace;
use crate::hosted::pki::{CertKey, ControlPlanePki};
use crate::provisioner::{OpContext, ProvisionError, Step};

/// Where a control plane's API server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Endpoint {
    /// An IP address or a DNS name (both go into the serving certificate).
    pub(super) host: String,
    pub(super) port: u16,
}

impl Endpoint {
    /// `https://host:port`.
    pub(super) fn url(&self) -> String {
        crate::hosted::control_plane::endpoint(&self.host, self.port)
    }
}

/// One control plane at one version, everything a runtime needs to start it.
pub(super) struct Launch {
    pub(super) version: (u32, u32),
    pub(super) artifacts: Artifacts,
    pub(super) pki: ControlPlanePki,
    /// Its etcd client certificate (common name: its etcd user).
    pub(super) etcd_client: CertKey,
    pub(super) etcd_server_ca: String,
    pub(super) etcd_endpoints: Vec<String>,
    pub(super) key_space: KeySpace,
    pub(super) endpoint: Endpoint,
}

/// How far a start has got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rollout {
    /// What was started is gone (KQueen restarted while processes were starting, a
    /// Deployment was removed by hand): start again.
    Lost,
    /// Still on its way, and why.
    Rolling(String),
    /// Everything runs at the wanted version (whether it serves is `/readyz`'s answer).
    Complete,
}

#[async_trait]
pub(super) trait Runtime: Send + Sync {
    /// Reserves the place the API server will be reached at (a port, a Service); `Wait`
    /// until it is known. May be called again after a restart: the same answer then.
    async fn reserve(&self, ctx: &OpContext) -> Result<Step<Endpoint>, ProvisionError>;

    /// Names the serving certificate needs beyond the endpoint's host.
    fn extra_names(&self, ctx: &OpContext) -> Vec<String>;

    /// Starts the control plane, or moves the running one to `launch`'s version.
    async fn start(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError>;

    /// How far the last start has got.
    async fn rollout(&self, ctx: &OpContext) -> Result<Rollout, ProvisionError>;

    /// How long a start may take until `/readyz` answers.
    fn ready_within(&self) -> Duration;

    /// What may tell why a start did not become ready (the end of a log, a status).
    async fn diagnosis(&self, ctx: &OpContext) -> String;

    /// Whether [`Runtime::resume`] does anything.
    fn needs_resume(&self) -> bool;

    /// Brings a Ready control plane back after KQueen started (nothing when something else
    /// keeps it running).
    async fn resume(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError>;

    /// Stops the control plane and removes what the runtime made for it; `Wait` until gone.
    async fn stop(&self, ctx: &OpContext) -> Result<Step<()>, ProvisionError>;
}
