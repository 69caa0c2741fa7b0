//! Backups of a cluster: what each holds, how to ask for one, and the answer to that.

use serde::{Deserialize, Serialize};

use crate::clusters::Operation;

/// A backup asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupRequest {
    /// `resources` (default): every listable resource, through the cluster's API server.
    /// `key_space` (hosted clusters): the control plane's whole key space in the shared etcd
    /// at one revision, read with the cluster's own etcd user and sealed in KQueen's vault
    /// (Secrets included); restored whole into a hosted cluster.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "resources"))]
    pub kind: Option<String>,
    /// Keep the cluster's Secrets too: sealed in KQueen's vault, never in the archive.
    #[serde(default)]
    pub include_secrets: bool,
    /// Ask the cluster for a VolumeSnapshot of every PersistentVolumeClaim (where it serves
    /// the snapshot API, `snapshot.storage.k8s.io`; the class is the cluster's default).
    #[serde(default)]
    pub snapshot_volumes: bool,
}

/// A VolumeSnapshot a backup asked the cluster for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupSnapshot {
    pub namespace: String,
    /// The claim snapshotted.
    pub claim: String,
    /// The VolumeSnapshot's name (labelled `kqueen.io/backup=<backup id>`).
    pub name: String,
    /// Created; false when the cluster refused it (then `reason`).
    pub created: bool,
    pub reason: Option<String>,
}

/// How many objects of one kind a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupKind {
    /// API group; empty for the core group.
    pub group: String,
    pub kind: String,
    pub count: u32,
}

/// What a backup left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupLeftOut {
    /// `Kind` or `Kind.group`, or an API group the cluster could not describe.
    pub what: String,
    pub reason: String,
    /// Objects left out (0: the resource was not read at all).
    pub count: u32,
}

/// A PersistentVolume or PersistentVolumeClaim a backup recorded (its data is not in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupVolume {
    /// `PersistentVolume` or `PersistentVolumeClaim`.
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub storage_class: Option<String>,
    /// Capacity as Kubernetes writes it (`10Gi`).
    pub size: Option<String>,
    pub csi_driver: Option<String>,
    /// A claim's volume, or a volume's claim (`namespace/name`).
    pub bound_to: Option<String>,
}

/// What a finished backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupContents {
    /// The cluster's Kubernetes version when it was taken.
    pub kubernetes_version: Option<String>,
    /// Objects in the archive (Secrets not counted).
    pub objects: u32,
    /// Secrets sealed in the vault.
    pub secrets: u32,
    /// Secrets the cluster holds that were not backed up (not asked for).
    pub secrets_left_out: u32,
    pub namespaces: Vec<String>,
    pub kinds: Vec<BackupKind>,
    pub left_out: Vec<BackupLeftOut>,
    pub volumes: Vec<BackupVolume>,
    /// How to keep the data of the volumes, which no backup of objects holds.
    pub volume_guidance: String,
    /// The VolumeSnapshots asked for (empty unless `snapshot_volumes`).
    pub snapshots: Vec<BackupSnapshot>,
    /// Why no VolumeSnapshot was asked for, when they were wanted (the cluster does not serve
    /// the snapshot API, or holds no claim).
    pub snapshot_note: Option<String>,
    /// What a key-space backup copied (its values are sealed in the vault; the archive lists
    /// the keys).
    pub key_space: Option<BackupKeySpace>,
}

/// The copy of a hosted control plane's key space a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupKeySpace {
    /// The etcd revision it was read at.
    pub revision: i64,
    pub keys: u64,
    /// Keys and values, in bytes.
    pub bytes: u64,
}

/// What loading a key-space backup changes in the key space of the cluster restored into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeySpaceChanges {
    /// Keys written: new, or holding another value now.
    pub written: u64,
    /// Keys already holding the backup's value.
    pub unchanged: u64,
    /// Keys the backup does not hold: removed.
    pub removed: u64,
}

/// One backup of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Backup {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    /// UUID of the cluster it was taken of (which may have been deleted since).
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub cluster: String,
    /// `resources` or `key_space`.
    pub kind: String,
    /// `running`, `succeeded` or `failed`.
    pub state: String,
    pub include_secrets: bool,
    /// VolumeSnapshots of its claims asked for.
    pub snapshot_volumes: bool,
    /// Why it failed.
    pub error: Option<String>,
    /// What it holds, once taken.
    pub contents: Option<BackupContents>,
    /// The archive's size in bytes, once written.
    pub size_bytes: Option<u64>,
    pub requested_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub finished_at: Option<String>,
}

/// A backup in the list of a tenant's (or every tenant's) backups, with the cluster it was
/// taken of, live or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ListedBackup {
    pub backup: Backup,
    /// The tenant's slug.
    pub tenant: String,
    pub cluster_name: String,
    /// The cluster was deleted: restore the backup into another one.
    pub cluster_deleted: bool,
}

/// A queued backup: the backup (`running`) and the operation that takes it; follow it at
/// `/api/v1/clusters/{id}/backups/{backup}` until `succeeded` or `failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupAccepted {
    pub backup: Backup,
    pub operation: Operation,
}

/// A restore asked for (or its plan).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RestoreRequest {
    /// The cluster to restore into (UUID); absent or empty: the backup's own.
    #[serde(default)]
    pub target_cluster: Option<String>,
    /// Only these namespaces of the backup, their Namespaces and the backup's
    /// CustomResourceDefinitions; empty: everything.
    #[serde(default)]
    pub namespaces: Vec<String>,
}

/// One object of a restore's plan or report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RestoreItem {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// When it is created: `definitions`, `namespaces`, `cluster-settings`, `access`,
    /// `config`, `storage`, `services`, `workloads`, `other`.
    pub stage: String,
    /// `will-create` (plan), `created` (restore), `unchanged` or `differs` (it exists: left
    /// as it is), `cannot` (not restorable here), `failed` (refused by the cluster).
    pub fate: String,
    /// Why, for `cannot` and `failed` (and when a `will-create` waits for its CRD).
    pub reason: Option<String>,
}

/// What a restore would do; changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RestorePlan {
    /// UUID of the backup.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub backup: String,
    /// UUID of the cluster restored into.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub target_cluster: String,
    pub target_cluster_name: String,
    pub namespaces: Vec<String>,
    /// Each object's fate (a resources backup).
    pub items: Vec<RestoreItem>,
    /// What loading a key-space backup changes (its restore replaces the key space whole).
    pub key_space: Option<KeySpaceChanges>,
}

/// A restore of a backup into a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Restore {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    /// UUID of the backup restored.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub backup: String,
    /// UUID of the cluster restored into.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub cluster: String,
    pub namespaces: Vec<String>,
    /// `running`, `succeeded` or `failed`.
    pub state: String,
    pub error: Option<String>,
    /// What became of each object, once done.
    pub report: Option<Vec<RestoreItem>>,
    pub requested_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub finished_at: Option<String>,
}

/// A queued restore: the restore (`running`) and the operation of the cluster restored into;
/// follow it at `/api/v1/clusters/{cluster}/restores/{restore}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RestoreAccepted {
    pub restore: Restore,
    pub operation: Operation,
}

/// A cluster's backup schedule as set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupScheduleInput {
    /// Hours between backups (1–720).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 720))]
    pub every_hours: u32,
    /// Scheduled backups kept, newest first (1–100); backups taken by hand are not counted
    /// and never removed by the schedule.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub keep: u32,
    /// Keep the Secrets too (sealed in the vault).
    #[serde(default)]
    pub include_secrets: bool,
    /// `resources` (default) or `key_space` (hosted clusters), as for one backup.
    #[serde(default)]
    pub kind: Option<String>,
    /// A VolumeSnapshot of every claim with each backup (resources backups).
    #[serde(default)]
    pub snapshot_volumes: bool,
}

impl BackupScheduleInput {
    /// What each scheduled backup asks for, as one backup would.
    pub fn backup(&self) -> BackupRequest {
        BackupRequest {
            kind: self.kind.clone(),
            include_secrets: self.include_secrets,
            snapshot_volumes: self.snapshot_volumes,
        }
    }
}

/// A cluster's backup schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupSchedule {
    pub every_hours: u32,
    pub keep: u32,
    /// `resources` or `key_space`.
    pub kind: String,
    pub include_secrets: bool,
    pub snapshot_volumes: bool,
    /// RFC 3339: when the next backup is due.
    pub next_at: String,
    pub updated_by: String,
    /// RFC 3339.
    pub updated_at: String,
}
