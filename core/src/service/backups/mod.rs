//! Backups of clusters: tenant admins (of the cluster's tenant) and operators take a backup
//! of what a cluster holds (a durable operation, [`run`]), list a cluster's backups with what
//! each holds, download an archive (audited: who downloaded which backup), and restore one
//! into its cluster or another ([`restore`]).

mod restore;
mod run;
mod schedule;

use uuid::Uuid;

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::backup::storage::ArchiveDir;
use crate::backup::Backup;
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationKind, OperationTarget};
use crate::deps::Deps;
use crate::policy::Permission;
use crate::{Actor, Error, Result};

pub use restore::{RestorePlan, RestoreRequest};

/// How long taking a backup may take.
const OPERATION_MINUTES: i64 = 30;

/// A downloaded archive: its file name and bytes.
#[derive(Clone)]
pub struct BackupArchive {
    pub file_name: String,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for BackupArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupArchive")
            .field("file_name", &self.file_name)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

#[derive(Clone)]
pub struct Backups {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    admin: ClusterAdmin,
}

impl Backups {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        clusters: &Clusters,
        admin: &ClusterAdmin,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            admin: admin.clone(),
        }
    }

    fn archives(&self) -> ArchiveDir {
        ArchiveDir::new(self.deps.settings.backup_dir.clone())
    }

    /// The cluster `cluster_id` when `actor` may back it up (tenant admin or operator);
    /// members get `Forbidden`, other tenants `NotFound`, both audited as `action`.
    async fn authorized(&self, actor: &Actor, cluster_id: &str, action: &str) -> Result<Cluster> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageBackups(cluster.tenant_id),
                action,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        Ok(cluster)
    }

    /// The backups of a cluster, newest first.
    pub async fn list(&self, actor: &Actor, cluster_id: &str) -> Result<Vec<Backup>> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_VIEW)
            .await?;
        self.deps.store.backups_of(cluster.id).await
    }

    /// One backup of a cluster.
    pub async fn get(&self, actor: &Actor, cluster_id: &str, backup_id: &str) -> Result<Backup> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_VIEW)
            .await?;
        self.backup_of(&cluster, backup_id).await
    }

    async fn backup_of(&self, cluster: &Cluster, backup_id: &str) -> Result<Backup> {
        let id = Uuid::parse_str(backup_id.trim()).map_err(|_| Error::NotFound("backup"))?;
        match self.deps.store.backup(id).await {
            Ok(b) if b.cluster_id == cluster.id => Ok(b),
            Ok(_) => Err(Error::NotFound("backup")),
            Err(e) => Err(e),
        }
    }

    /// Queues a backup of the cluster (Secrets only when `include_secrets`, sealed in the
    /// vault). Conflict when the cluster is not Ready or a backup of it is running.
    pub async fn take(
        &self,
        actor: &Actor,
        cluster_id: &str,
        include_secrets: bool,
    ) -> Result<(Backup, Operation)> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_CREATE)
            .await?;
        let backup = Backup::new(
            cluster.tenant_id,
            cluster.id,
            include_secrets,
            &actor.to_string(),
        );
        let result = self.queue(actor, &cluster, backup).await;
        self.guard
            .audited(
                actor,
                action::BACKUP_CREATE,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Records `backup` of `cluster` and queues the operation that takes it, audited as
    /// `actor`'s.
    async fn queue(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        backup: Backup,
    ) -> Result<(Backup, Operation)> {
        let who = backup.requested_by.clone();
        let now = crate::clock::now();
        let op = Operation::new(
            cluster.id,
            OperationKind::Backup,
            Some(OperationTarget::Backup(backup.id)),
            &who,
            now,
            chrono::Duration::minutes(OPERATION_MINUTES),
        );
        let secrets = if backup.include_secrets {
            "with Secrets"
        } else {
            "without Secrets"
        };
        let event = ClusterEvent::new(
            cluster.id,
            Some(op.id),
            EventKind::State,
            format!("Backup {secrets} requested by {who}"),
            now,
        );
        let audit = AuditEvent::success(actor, action::BACKUP_CREATE, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("backup {} {secrets}", backup.id));
        self.deps
            .store
            .queue_backup(&backup, &op, &event, &audit)
            .await
            .map(|()| (backup, op))
    }

    /// The archive of a finished backup, audited as a download.
    pub async fn archive(
        &self,
        actor: &Actor,
        cluster_id: &str,
        backup_id: &str,
    ) -> Result<BackupArchive> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_DOWNLOAD)
            .await?;
        let result = async {
            let backup = self.backup_of(&cluster, backup_id).await?;
            if backup.summary.is_none() {
                return Err(Error::Conflict(format!(
                    "backup {} has no archive: it is {}",
                    backup.id, backup.state
                )));
            }
            let bytes = self.archives().get(cluster.id, backup.id).await?;
            Ok((backup, bytes))
        }
        .await;
        let (backup, bytes) = self
            .guard
            .audited(
                actor,
                action::BACKUP_DOWNLOAD,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await?;
        let audit = AuditEvent::success(actor, action::BACKUP_DOWNLOAD, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("backup {}", backup.id));
        self.deps.store.record_audit(&audit).await?;
        Ok(BackupArchive {
            file_name: format!(
                "{}-{}.tar.gz",
                cluster.name.as_str(),
                backup.created_at.format("%Y%m%d-%H%M%S")
            ),
            bytes,
        })
    }
}
