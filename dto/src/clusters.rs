//! A cluster's operations, timeline and what its provider can do.

use serde::{Deserialize, Serialize};

/// What the cluster's provider can do with its current settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Capabilities {
    pub scale: bool,
    pub upgrade: bool,
    /// Deleting the cluster removes machines (not only KQueen's record).
    pub deletes_infrastructure: bool,
}

/// A durable operation on a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Operation {
    /// UUID.
    pub id: String,
    /// `create`, `delete`, `scale` or `upgrade` (the cluster's own); `app-deploy`,
    /// `app-delete`, `addon-apply` or `addon-remove` (what runs in it).
    pub kind: String,
    /// `pending`, `running`, `succeeded` or `failed`.
    pub state: String,
    pub step: String,
    pub progress: u8,
    pub attempts: u32,
    pub error: Option<String>,
    /// The node count or version a scale or upgrade aims at.
    pub target: Option<String>,
    pub requested_by: String,
    /// RFC 3339 (UTC), like every time below.
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub deadline_at: String,
}

/// One entry of a cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    /// UUID (v7: ordered by time).
    pub id: String,
    /// RFC 3339 (UTC).
    pub at: String,
    /// `step`, `log`, `state` or `error`.
    pub kind: String,
    pub message: String,
}

/// What a worker node needs to join a hosted cluster (`kubeadm join`). `Debug` leaves out
/// the token's secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Join {
    /// `host:port` of the API server.
    pub endpoint: String,
    /// The bootstrap token `<id>.<secret>`: lets a machine join until it expires.
    pub token: String,
    pub token_id: String,
    /// RFC 3339 (UTC).
    pub expires_at: String,
    /// `sha256:<hex>` of the cluster CA's public key.
    pub ca_cert_hash: String,
    /// The command to run on the node.
    pub command: String,
}

/// What a cluster keeps in storage shared with other clusters (a hosted control plane's
/// key space in the shared etcd), as last measured. Operators only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedStorage {
    pub keys: u64,
    /// Keys plus values.
    pub bytes: u64,
    /// False: read only (its tenant is over its storage quota).
    pub writable: bool,
    /// RFC 3339 (UTC).
    pub measured_at: String,
}

impl std::fmt::Debug for Join {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Join")
            .field("endpoint", &self.endpoint)
            .field("token_id", &self.token_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A tenant's clusters' shared storage (hosted control planes' etcd key spaces) against its
/// quota, as last measured. Operators only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TenantStorage {
    pub tenant: String,
    /// Its clusters with a reading.
    pub clusters: u32,
    /// Keys plus values, over those clusters.
    pub used_bytes: u64,
    /// None: no quota.
    pub quota_bytes: Option<u64>,
    /// False: over its quota, its clusters are (or are being made) read-only.
    pub writable: bool,
}
