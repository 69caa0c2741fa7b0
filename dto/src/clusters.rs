//! Clusters: their state, operations, timeline and what their provider can do.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::kinds::ProviderKind;

/// Where a cluster is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ClusterState {
    Provisioning,
    Ready,
    Updating,
    Deleting,
    Error,
    Unknown,
}

impl ClusterState {
    pub const ALL: &'static [ClusterState] = &[
        ClusterState::Provisioning,
        ClusterState::Ready,
        ClusterState::Updating,
        ClusterState::Deleting,
        ClusterState::Error,
        ClusterState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Provisioning => "provisioning",
            ClusterState::Ready => "ready",
            ClusterState::Updating => "updating",
            ClusterState::Deleting => "deleting",
            ClusterState::Error => "error",
            ClusterState::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// A human label ("Provisioning").
    pub fn label(self) -> &'static str {
        match self {
            ClusterState::Provisioning => "Provisioning",
            ClusterState::Ready => "Ready",
            ClusterState::Updating => "Updating",
            ClusterState::Deleting => "Deleting",
            ClusterState::Error => "Error",
            ClusterState::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cluster, with the progress of its current (or last) operation where known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ClusterOut))]
pub struct Cluster {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    /// The tenant's slug.
    pub tenant: String,
    pub name: String,
    /// The template's name.
    pub template: String,
    pub kind: ProviderKind,
    pub state: ClusterState,
    /// Its non-secret parameters.
    pub parameters: BTreeMap<String, String>,
    pub node_count: u32,
    pub endpoint: Option<String>,
    pub error: Option<String>,
    /// When the tenant's time-to-live deletes the cluster (RFC 3339, UTC, like every time
    /// below).
    pub expires_at: Option<String>,
    /// Production: deleting it, restoring a backup over it and taking the mark off need a
    /// second person's approval; its time-to-live does not delete it.
    #[serde(default)]
    pub production: bool,
    pub created_by: String,
    pub created_at: String,
    /// Progress of the current (or last) operation (not in lists).
    pub progress: Option<u8>,
    pub current_step: Option<String>,
}

/// A cluster with what its provider can do, its operations and its timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ClusterDetailOut))]
pub struct ClusterDetail {
    #[serde(flatten)]
    pub cluster: Cluster,
    pub capabilities: Capabilities,
    /// Newest first.
    pub operations: Vec<Operation>,
    /// The timeline, oldest first (the newest 300 entries).
    pub events: Vec<Event>,
    /// What tenant admins' personal kubeconfigs may do in the cluster: `namespaced`
    /// (`admin` in the tenant's namespaces) or `cluster-admin`, as its template says.
    /// Members always get `edit` in the tenant's namespaces.
    #[cfg_attr(feature = "openapi", schema(example = "namespaced"))]
    pub admin_access: String,
    /// Operators, hosted clusters: the etcd key space's keys and bytes, last measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_storage: Option<SharedStorage>,
}

/// What the cluster's provider can do with its current settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Capabilities {
    pub scale: bool,
    pub upgrade: bool,
    /// Deleting the cluster removes machines (not only KQueen's record).
    pub deletes_infrastructure: bool,
    /// A NotReady node's machine can be replaced.
    #[serde(default)]
    pub replace_node: bool,
}

/// A durable operation on a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Operation {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    /// `create`, `delete`, `scale`, `upgrade` or `replace-node` (the cluster's own);
    /// `app-deploy`, `app-delete`, `addon-apply`, `addon-remove`, `backup` or `restore` (what
    /// runs in it).
    pub kind: String,
    /// `pending`, `running`, `succeeded` or `failed`.
    pub state: String,
    pub step: String,
    pub progress: u8,
    pub attempts: u32,
    pub error: Option<String>,
    /// What it works towards: a scale's node count, an upgrade's version, the node a
    /// replace-node replaces, an application's id, an addon's name, a backup's or restore's id.
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
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
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

/// A requested cluster and the operation that provisions it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterAccepted {
    pub cluster: Cluster,
    pub operation: Operation,
}

/// One page of clusters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterList {
    pub items: Vec<Cluster>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}

/// A scale request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ScaleIn))]
pub struct Scale {
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub node_count: u32,
}

/// An upgrade request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = UpgradeIn))]
pub struct Upgrade {
    /// Such as `1.34` or `v1.34.2`.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^[A-Za-z0-9.+-]{1,20}$", example = "v1.34.2")
    )]
    pub kubernetes_version: String,
}
