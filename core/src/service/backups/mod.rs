//! Backups of clusters: tenant admins (of the cluster's tenant) and operators take a backup
//! of what a cluster holds (a durable operation, [`run`]), list a cluster's backups with what
//! each holds, download an archive (audited: who downloaded which backup), restore one into
//! its cluster or another ([`restore`]), and delete one. A backup outlives its cluster: the
//! backups of a deleted cluster are found by tenant ([`Backups::all`]) and by id, and restored
//! into another cluster.

mod key_space;
mod restore;
mod run;
mod schedule;

use uuid::Uuid;

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::backup::storage::ArchiveStore;
use crate::backup::{Backup, BackupKind, ListedBackup};
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationKind, OperationTarget};
use crate::deps::Deps;
use crate::policy::{self, Permission};
use crate::tenant::TenantSlug;
use crate::vault::names;
use crate::{Actor, Error, Result, ValidationError};

pub use restore::{RestorePlan, RestoreRequest};

/// How long taking a backup may take.
const OPERATION_MINUTES: i64 = 30;

/// Backups listed at most by [`Backups::all`].
const LISTED: u32 = 500;

/// What a backup asked for copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupOptions {
    pub kind: BackupKind,
    /// Secrets too, sealed in the vault (a key-space backup always holds them).
    pub include_secrets: bool,
    /// A VolumeSnapshot of every claim (resources backups only).
    pub snapshot_volumes: bool,
}

impl BackupOptions {
    /// A resources backup, with Secrets when `include_secrets`.
    pub fn resources(include_secrets: bool) -> Self {
        Self {
            kind: BackupKind::Resources,
            include_secrets,
            snapshot_volumes: false,
        }
    }
}

/// Which backup a request names: by its id alone, or as one of a cluster's backups (then it
/// is not found unless it is a backup of that cluster).
#[derive(Debug, Clone, Copy)]
pub struct BackupRef<'a> {
    /// The cluster (id) whose backup it must be, when the request names one.
    pub cluster: Option<&'a str>,
    pub backup: &'a str,
}

impl<'a> BackupRef<'a> {
    /// Backup `backup` of cluster `cluster`.
    pub fn of(cluster: &'a str, backup: &'a str) -> Self {
        Self {
            cluster: Some(cluster),
            backup,
        }
    }

    /// Backup `backup`, whichever cluster it was taken of (deleted ones too).
    pub fn id(backup: &'a str) -> Self {
        Self {
            cluster: None,
            backup,
        }
    }
}

/// A backup found for a use case, with its cluster while that cluster lives.
struct Located {
    backup: Backup,
    cluster: Option<Cluster>,
}

impl Located {
    /// What the audit trail names: the cluster, or the backup when its cluster is gone.
    fn target(&self) -> String {
        match (&self.cluster, &self.backup.summary) {
            (Some(c), _) => c.name.to_string(),
            (None, Some(s)) => s.cluster.clone(),
            (None, None) => format!("backup {}", self.backup.id),
        }
    }
}

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

    /// Where archives are kept, as configured.
    fn archives(&self) -> &dyn ArchiveStore {
        self.deps.settings.archives.as_ref()
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

    /// The backup `r` names when `actor` may use it for `action`: tenant admins of its
    /// tenant and operators; members get `Forbidden`, other tenants `NotFound` (audited).
    async fn located(&self, actor: &Actor, r: BackupRef<'_>, action: &str) -> Result<Located> {
        if let Some(cluster_id) = r.cluster {
            let cluster = self.authorized(actor, cluster_id, action).await?;
            let result = self.backup_of(&cluster, r.backup).await;
            let backup = self
                .guard
                .audited(
                    actor,
                    action,
                    cluster.name.as_str(),
                    Some(cluster.tenant_id),
                    result,
                )
                .await?;
            return Ok(Located {
                backup,
                cluster: Some(cluster),
            });
        }
        let store = &self.deps.store;
        let backup = self
            .guard
            .visible(
                actor,
                action,
                (r.backup, "backup"),
                |uuid| store.backup(uuid),
                |b: &crate::backup::Backup| b.tenant_id,
            )
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageBackups(backup.tenant_id),
                action,
                r.backup,
                Some(backup.tenant_id),
            )
            .await?;
        let cluster = match self.deps.store.cluster(backup.cluster_id).await {
            Ok(c) => Some(c),
            Err(Error::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        Ok(Located { backup, cluster })
    }

    /// The backups of a cluster, newest first.
    pub async fn list(&self, actor: &Actor, cluster_id: &str) -> Result<Vec<Backup>> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_VIEW)
            .await?;
        self.deps.store.backups_of(cluster.id).await
    }

    /// The backups `actor` may manage, of live and deleted clusters, newest first (at most
    /// 500): of every tenant for operators, of the tenants they administer for others; of
    /// the tenant `tenant` (slug) alone when given.
    pub async fn all(&self, actor: &Actor, tenant: Option<&str>) -> Result<Vec<ListedBackup>> {
        if actor.identity().is_none() && !actor.is_trusted() {
            let error = Error::Unauthenticated;
            self.guard
                .audit_refusal(actor, action::BACKUP_VIEW, "backups", None, &error)
                .await?;
            return Err(error);
        }
        if let Some(slug) = tenant.map(str::trim).filter(|s| !s.is_empty()) {
            return self.in_tenant(actor, slug).await;
        }
        match actor.identity() {
            Some(who) if !who.is_operator => {
                let mine: Vec<Uuid> = who.admin_tenants().collect();
                self.deps.store.backups_in(Some(&mine), LISTED).await
            }
            _ => self.deps.store.backups_in(None, LISTED).await,
        }
    }

    /// The backups of the tenant `slug`: NotFound unless `actor` may see it, Forbidden
    /// unless they may manage its backups.
    async fn in_tenant(&self, actor: &Actor, slug: &str) -> Result<Vec<ListedBackup>> {
        let tenant = match TenantSlug::parse(slug) {
            Ok(s) => match self.deps.store.tenant_by_slug(&s).await {
                Ok(t) => Some(t),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        let Some(tenant) =
            tenant.filter(|t| policy::check(actor, Permission::ViewTenant(t.id)).is_ok())
        else {
            let error = Error::NotFound("tenant");
            self.guard
                .audit_refusal(actor, action::BACKUP_VIEW, slug, None, &error)
                .await?;
            return Err(error);
        };
        self.guard
            .authorize(
                actor,
                Permission::ManageBackups(tenant.id),
                action::BACKUP_VIEW,
                slug,
                Some(tenant.id),
            )
            .await?;
        self.deps.store.backups_in(Some(&[tenant.id]), LISTED).await
    }

    /// One backup, of a cluster or by id.
    pub async fn get(&self, actor: &Actor, r: BackupRef<'_>) -> Result<Backup> {
        Ok(self.located(actor, r, action::BACKUP_VIEW).await?.backup)
    }

    async fn backup_of(&self, cluster: &Cluster, backup_id: &str) -> Result<Backup> {
        let id = Uuid::parse_str(backup_id.trim()).map_err(|_| Error::NotFound("backup"))?;
        match self.deps.store.backup(id).await {
            Ok(b) if b.cluster_id == cluster.id => Ok(b),
            Ok(_) => Err(Error::NotFound("backup")),
            Err(e) => Err(e),
        }
    }

    /// Deletes a finished backup: its record (and its finished restores'), its archive and
    /// its sealed Secrets. Conflict while it is being taken or restored.
    pub async fn delete(&self, actor: &Actor, r: BackupRef<'_>) -> Result<()> {
        let found = self.located(actor, r, action::BACKUP_DELETE).await?;
        let target = found.target();
        let audit = AuditEvent::success(actor, action::BACKUP_DELETE, target.as_str())
            .in_tenant(found.backup.tenant_id)
            .with_detail(format!("backup {}", found.backup.id));
        let result = self.remove(&found.backup, &audit).await;
        self.guard
            .audited(
                actor,
                action::BACKUP_DELETE,
                &target,
                Some(found.backup.tenant_id),
                result,
            )
            .await
    }

    /// Removes `backup`'s record (audited as `audit`), then its archive and what it sealed in
    /// the vault (Secrets, or the key space).
    async fn remove(&self, backup: &Backup, audit: &AuditEvent) -> Result<()> {
        self.deps.store.remove_backup(backup.id, audit).await?;
        self.archives().remove(backup.cluster_id, backup.id).await?;
        let sealed = match backup.kind {
            BackupKind::KeySpace => Some(names::backup_key_space(backup.tenant_id, backup.id)),
            BackupKind::Resources if backup.include_secrets => {
                Some(names::backup_secrets(backup.tenant_id, backup.id))
            }
            BackupKind::Resources => None,
        };
        if let Some(at) = sealed {
            self.deps.vault.delete(&at).await?;
        }
        Ok(())
    }

    /// Queues a backup of the cluster as `options` ask. Conflict when the cluster is not
    /// Ready or a backup of it is running; Invalid for a key-space backup of a cluster that
    /// keeps no key space in the shared etcd, or with volume snapshots.
    pub async fn take(
        &self,
        actor: &Actor,
        cluster_id: &str,
        options: BackupOptions,
    ) -> Result<(Backup, Operation)> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_CREATE)
            .await?;
        let result = async {
            let backup = self.backup_for(&cluster, options, &actor.to_string())?;
            self.queue(actor, &cluster, backup).await
        }
        .await;
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

    /// What `backup` copies, in words ("with Secrets and volume snapshots").
    fn what(backup: &Backup) -> &'static str {
        match (backup.kind, backup.include_secrets, backup.snapshot_volumes) {
            (BackupKind::KeySpace, ..) => "of the key space in the shared etcd",
            (_, true, false) => "with Secrets",
            (_, false, false) => "without Secrets",
            (_, true, true) => "with Secrets and volume snapshots",
            (_, false, true) => "without Secrets, with volume snapshots",
        }
    }

    /// The backup `options` ask for, when the cluster can have it.
    fn backup_for(&self, cluster: &Cluster, options: BackupOptions, who: &str) -> Result<Backup> {
        let invalid = |field: &'static str, message: &'static str| {
            Err(Error::Invalid(ValidationError::new(field, message)))
        };
        let mut include_secrets = options.include_secrets;
        if options.kind == BackupKind::KeySpace {
            let dumps = self
                .deps
                .registry
                .get(cluster.provider_kind)
                .is_some_and(|p| p.dumps_shared_storage());
            if !dumps {
                return invalid(
                    "kind",
                    "only hosted clusters keep a key space in the shared etcd: back this \
                     cluster up as resources",
                );
            }
            if options.snapshot_volumes {
                return invalid(
                    "snapshot_volumes",
                    "a key-space backup copies etcd, not volumes: ask for VolumeSnapshots with \
                     a resources backup",
                );
            }
            // The copy holds every value the API server wrote, Secrets too (sealed).
            include_secrets = true;
        }
        Ok(
            Backup::new(cluster.tenant_id, cluster.id, include_secrets, who)
                .of_kind(options.kind)
                .snapshotting(options.snapshot_volumes),
        )
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
        let secrets = Self::what(&backup);
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
    pub async fn archive(&self, actor: &Actor, r: BackupRef<'_>) -> Result<BackupArchive> {
        let found = self.located(actor, r, action::BACKUP_DOWNLOAD).await?;
        let (backup, target) = (&found.backup, found.target());
        let result = async {
            if backup.summary.is_none() {
                return Err(Error::Conflict(format!(
                    "backup {} has no archive: it is {}",
                    backup.id, backup.state
                )));
            }
            self.archives().get(backup.cluster_id, backup.id).await
        }
        .await;
        let bytes = self
            .guard
            .audited(
                actor,
                action::BACKUP_DOWNLOAD,
                &target,
                Some(backup.tenant_id),
                result,
            )
            .await?;
        let audit = AuditEvent::success(actor, action::BACKUP_DOWNLOAD, target.as_str())
            .in_tenant(backup.tenant_id)
            .with_detail(format!("backup {}", backup.id));
        self.deps.store.record_audit(&audit).await?;
        Ok(BackupArchive {
            file_name: format!(
                "{target}-{}.tar.gz",
                backup.created_at.format("%Y%m%d-%H%M%S")
            ),
            bytes,
        })
    }
}
