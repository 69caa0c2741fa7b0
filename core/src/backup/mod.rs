//! Backups of what a cluster holds: every listable resource the cluster serves (found by
//! discovery, at each resource's preferred version), cleaned to what was declared
//! ([`clean`]), written as one archive a person can read ([`archive`]):
//! `<namespace>/<group>/<kind>/<name>.yaml` (`_cluster/…` for cluster-scoped objects, `core`
//! for the core group) beside `backup.yaml`, the summary. Secrets are in it only when asked
//! for, and then never in the archive: they are sealed in KQueen's vault.

pub mod archive;
pub mod clean;
pub mod collect;
pub mod plan;
pub mod restore;
pub mod schedule;
pub mod snapshots;
pub mod storage;
pub mod volumes;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use plan::{Fate, RestoreItem, Stage};

/// The string at `path` (`["metadata", "name"]`) in an object read from a cluster or an
/// archive, if there is one.
pub(crate) fn field<'a>(object: &'a serde_json::Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(object, |v, key| v.get(key))
        .and_then(serde_json::Value::as_str)
}
pub use volumes::{VolumeRecord, VOLUME_GUIDANCE};

crate::cluster::string_enum!(
    /// Where a backup is.
    BackupState {
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
    }
);

crate::cluster::string_enum!(
    /// What a backup copies.
    BackupKind {
        /// Every listable resource, through the cluster's API server.
        Resources = "resources",
        /// A hosted control plane's whole key space in the shared etcd, at one revision.
        KeySpace = "key_space",
    }
);

/// One backup of one cluster, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Backup {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub cluster_id: Uuid,
    pub kind: BackupKind,
    pub state: BackupState,
    /// Secrets asked for (sealed in the vault, never in the archive).
    pub include_secrets: bool,
    /// A VolumeSnapshot of every claim asked for.
    pub snapshot_volumes: bool,
    pub error: Option<String>,
    /// What it holds, once taken.
    pub summary: Option<BackupSummary>,
    /// The archive's size in bytes, once written.
    pub size_bytes: Option<u64>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A backup with the cluster it was taken of, which may have been deleted since.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedBackup {
    pub backup: Backup,
    pub cluster_name: String,
    pub tenant_slug: String,
    pub cluster_deleted: bool,
}

/// How many objects of one kind a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCount {
    /// Empty for the core group.
    pub group: String,
    pub kind: String,
    pub count: u32,
}

/// Objects a backup left out, by kind and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// `Kind` (`Kind.group` outside the core group), or a resource that was not listed.
    pub what: String,
    pub reason: String,
    /// Objects of it left out (0 for a resource that was not listed at all).
    pub count: u32,
}

/// What a backup holds; also its archive's `backup.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupSummary {
    pub cluster: String,
    pub tenant: String,
    pub taken_at: DateTime<Utc>,
    /// The cluster's `/version` when it was taken.
    pub kubernetes_version: Option<String>,
    /// Objects in the archive (Secrets not counted).
    pub objects: u32,
    /// Secrets sealed in the vault (0 unless asked for).
    pub secrets: u32,
    /// Secrets in the cluster that were not backed up (not asked for).
    pub secrets_left_out: u32,
    pub namespaces: Vec<String>,
    pub kinds: Vec<KindCount>,
    pub left_out: Vec<LeftOut>,
    pub volumes: Vec<VolumeRecord>,
    pub volume_guidance: String,
    /// The VolumeSnapshots asked for, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<snapshots::Snapshots>,
    /// What a key-space backup copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_space: Option<KeySpaceCopy>,
}

/// The copy of a hosted control plane's key space a backup holds (sealed in the vault).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySpaceCopy {
    /// The etcd revision it was read at.
    pub revision: i64,
    pub keys: u64,
    /// Keys and values.
    pub bytes: u64,
}

impl Backup {
    /// The same backup, of `kind`.
    pub fn of_kind(mut self, kind: BackupKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same backup, asking for a VolumeSnapshot of every claim when `snapshot`.
    pub fn snapshotting(mut self, snapshot: bool) -> Self {
        self.snapshot_volumes = snapshot;
        self
    }

    /// A backup `actor_name` asked for now, running from the start (its operation is queued
    /// in the same transaction).
    pub fn new(
        tenant_id: Uuid,
        cluster_id: Uuid,
        include_secrets: bool,
        requested_by: &str,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            tenant_id,
            cluster_id,
            kind: BackupKind::Resources,
            state: BackupState::Running,
            include_secrets,
            snapshot_volumes: false,
            error: None,
            summary: None,
            size_bytes: None,
            requested_by: requested_by.into(),
            created_at: crate::clock::now(),
            finished_at: None,
        }
    }
}

/// One restore of a backup into a cluster (the backup's own or another), as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub id: Uuid,
    /// The tenant of the cluster restored into.
    pub tenant_id: Uuid,
    /// The cluster restored into.
    pub cluster_id: Uuid,
    pub backup_id: Uuid,
    /// Only these namespaces (empty: everything).
    pub namespaces: Vec<String>,
    pub state: BackupState,
    pub error: Option<String>,
    /// What became of each object, once done.
    pub report: Option<Vec<RestoreItem>>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl Restore {
    /// A restore of `backup` into cluster `cluster_id` of `tenant_id`, asked for now.
    pub fn new(
        tenant_id: Uuid,
        cluster_id: Uuid,
        backup: &Backup,
        namespaces: Vec<String>,
        requested_by: &str,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            tenant_id,
            cluster_id,
            backup_id: backup.id,
            namespaces,
            state: BackupState::Running,
            error: None,
            report: None,
            requested_by: requested_by.into(),
            created_at: crate::clock::now(),
            finished_at: None,
        }
    }
}
