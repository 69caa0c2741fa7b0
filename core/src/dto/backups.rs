//! How backups travel: the `kqueen_dto::backups` types the REST API and the portal both send,
//! filled from the domain's own.

use kqueen_dto::backups;

use crate::backup::snapshots::SnapshotRecord;
use crate::backup::{
    Backup, BackupKind, BackupSummary, KindCount, LeftOut, ListedBackup, VolumeRecord,
};

impl From<KindCount> for backups::BackupKind {
    fn from(k: KindCount) -> Self {
        Self {
            group: k.group,
            kind: k.kind,
            count: k.count,
        }
    }
}

impl From<LeftOut> for backups::BackupLeftOut {
    fn from(l: LeftOut) -> Self {
        Self {
            what: l.what,
            reason: l.reason,
            count: l.count,
        }
    }
}

impl From<VolumeRecord> for backups::BackupVolume {
    fn from(v: VolumeRecord) -> Self {
        Self {
            kind: v.kind,
            namespace: v.namespace,
            name: v.name,
            storage_class: v.storage_class,
            size: v.size,
            csi_driver: v.csi_driver,
            bound_to: v.bound_to,
        }
    }
}

impl From<SnapshotRecord> for backups::BackupSnapshot {
    fn from(r: SnapshotRecord) -> Self {
        Self {
            namespace: r.namespace,
            claim: r.claim,
            name: r.name,
            created: r.created,
            reason: r.reason,
        }
    }
}

impl From<BackupSummary> for backups::BackupContents {
    fn from(s: BackupSummary) -> Self {
        Self {
            kubernetes_version: s.kubernetes_version,
            objects: s.objects,
            secrets: s.secrets,
            secrets_left_out: s.secrets_left_out,
            namespaces: s.namespaces,
            kinds: s.kinds.into_iter().map(Into::into).collect(),
            left_out: s.left_out.into_iter().map(Into::into).collect(),
            volumes: s.volumes.into_iter().map(Into::into).collect(),
            volume_guidance: s.volume_guidance,
            snapshot_note: s.snapshots.as_ref().and_then(|n| n.note.clone()),
            snapshots: s
                .snapshots
                .map(|n| n.records.into_iter().map(Into::into).collect())
                .unwrap_or_default(),
            key_space: s.key_space.map(|k| backups::BackupKeySpace {
                revision: k.revision,
                keys: k.keys,
                bytes: k.bytes,
            }),
        }
    }
}

impl From<Backup> for backups::Backup {
    fn from(b: Backup) -> Self {
        Self {
            id: b.id.to_string(),
            cluster: b.cluster_id.to_string(),
            kind: b.kind.to_string(),
            state: b.state.to_string(),
            include_secrets: b.include_secrets,
            snapshot_volumes: b.snapshot_volumes,
            error: b.error,
            contents: b.summary.map(Into::into),
            size_bytes: b.size_bytes,
            requested_by: b.requested_by,
            created_at: b.created_at.to_rfc3339(),
            finished_at: b.finished_at.map(|t| t.to_rfc3339()),
        }
    }
}

impl From<ListedBackup> for backups::ListedBackup {
    fn from(l: ListedBackup) -> Self {
        Self {
            backup: l.backup.into(),
            tenant: l.tenant_slug,
            cluster_name: l.cluster_name,
            cluster_deleted: l.cluster_deleted,
        }
    }
}

fn kebab<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl From<crate::backup::RestoreItem> for backups::RestoreItem {
    fn from(i: crate::backup::RestoreItem) -> Self {
        Self {
            api_version: i.api_version,
            kind: i.kind,
            namespace: i.namespace,
            name: i.name,
            stage: kebab(i.stage),
            fate: kebab(i.fate),
            reason: i.reason,
        }
    }
}

impl From<crate::RestorePlan> for backups::RestorePlan {
    fn from(p: crate::RestorePlan) -> Self {
        Self {
            backup: p.backup.id.to_string(),
            target_cluster: p.target.id.to_string(),
            target_cluster_name: p.target.name.as_str().to_owned(),
            namespaces: p.namespaces,
            items: p.items.into_iter().map(Into::into).collect(),
            key_space: p.key_space.map(|k| backups::KeySpaceChanges {
                written: k.written,
                unchanged: k.unchanged,
                removed: k.removed,
            }),
        }
    }
}

impl From<crate::backup::Restore> for backups::Restore {
    fn from(r: crate::backup::Restore) -> Self {
        Self {
            id: r.id.to_string(),
            backup: r.backup_id.to_string(),
            cluster: r.cluster_id.to_string(),
            namespaces: r.namespaces,
            state: r.state.to_string(),
            error: r.error,
            report: r
                .report
                .map(|items| items.into_iter().map(Into::into).collect()),
            requested_by: r.requested_by,
            created_at: r.created_at.to_rfc3339(),
            finished_at: r.finished_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// And back: a backup as the API and the portal ask for it (an unknown kind is refused).
impl TryFrom<&backups::BackupRequest> for crate::BackupOptions {
    type Error = crate::Error;
    fn try_from(r: &backups::BackupRequest) -> crate::Result<Self> {
        let kind = match r.kind.as_deref().map(str::trim) {
            None | Some("") => BackupKind::Resources,
            Some(k) => BackupKind::parse(k).ok_or_else(|| {
                crate::Error::Invalid(crate::ValidationError::new(
                    "kind",
                    format!("“{k}” is not a kind of backup (resources, key_space)"),
                ))
            })?,
        };
        Ok(Self {
            kind,
            include_secrets: r.include_secrets,
            snapshot_volumes: r.snapshot_volumes,
        })
    }
}

/// And back: a restore as the API and the portal ask for it.
impl From<&backups::RestoreRequest> for crate::RestoreRequest {
    fn from(r: &backups::RestoreRequest) -> Self {
        Self {
            target: r.target_cluster.clone(),
            namespaces: r.namespaces.clone(),
        }
    }
}

impl From<crate::backup::schedule::BackupSchedule> for backups::BackupSchedule {
    fn from(s: crate::backup::schedule::BackupSchedule) -> Self {
        Self {
            every_hours: s.every_hours,
            keep: s.keep,
            kind: s.kind.to_string(),
            include_secrets: s.include_secrets,
            snapshot_volumes: s.snapshot_volumes,
            next_at: s.next_at.to_rfc3339(),
            updated_by: s.updated_by,
            updated_at: s.updated_at.to_rfc3339(),
        }
    }
}
