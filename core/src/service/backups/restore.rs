//! Restores: a backup's objects put back into its own cluster or another (tenant admins of
//! both tenants, or operators). First the plan (changes nothing), then the restore, a durable
//! operation of the cluster restored into; objects are created, never overwritten.

use serde_json::Value;
use uuid::Uuid;

use super::{BackupRef, Backups};
use crate::approval::Approval;
use crate::audit::{action, AuditEvent};
use crate::backup::archive::{read_archive, read_secrets_stream};
use crate::backup::{restore, Backup, BackupKind, Restore, RestoreItem};
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationKind, OperationTarget};
use crate::hosted::dump::Loaded;
use crate::provisioner::Reporter;
use crate::service::apps::{op_error, workload_error};
use crate::vault::names;
use crate::workloads::WorkloadError;
use crate::{Actor, Error, Result, ValidationError};

/// How long a restore may take.
const OPERATION_MINUTES: i64 = 30;

/// A restore as asked for.
#[derive(Debug, Clone, Default)]
pub struct RestoreRequest {
    /// The cluster to restore into (id); None or blank: the backup's own.
    pub target: Option<String>,
    /// Only these namespaces of the backup (empty: everything).
    pub namespaces: Vec<String>,
}

/// What a restore would do: the cluster it goes into and each object's fate.
#[derive(Debug, Clone, PartialEq)]
pub struct RestorePlan {
    pub backup: Backup,
    pub target: Cluster,
    pub namespaces: Vec<String>,
    pub items: Vec<RestoreItem>,
    /// For a key-space backup: what loading it changes in the target's key space.
    pub key_space: Option<Loaded>,
}

impl Backups {
    /// The backup and the cluster to restore into (the request's, or the backup's own while
    /// it lives), both as `actor` may use them (refusals are audited there), with the
    /// request's namespaces checked against the backup's.
    async fn restore_input(
        &self,
        actor: &Actor,
        r: BackupRef<'_>,
        req: &RestoreRequest,
    ) -> Result<(Backup, Cluster, Vec<String>)> {
        let found = self.located(actor, r, action::BACKUP_RESTORE).await?;
        let target = match (req.target.as_deref().map(str::trim), &found.cluster) {
            (None | Some(""), Some(own)) => own.clone(),
            (None | Some(""), None) => {
                let error = Error::Invalid(ValidationError::new(
                    "target_cluster",
                    "the backup's cluster was deleted: choose a cluster to restore into",
                ));
                self.guard
                    .audit_refusal(
                        actor,
                        action::BACKUP_RESTORE,
                        &found.target(),
                        Some(found.backup.tenant_id),
                        &error,
                    )
                    .await?;
                return Err(error);
            }
            (Some(id), _) => self.authorized(actor, id, action::BACKUP_RESTORE).await?,
        };
        let result = restorable(&found.backup, req);
        let namespaces = self.audited_restore(actor, &target, result).await?;
        Ok((found.backup, target, namespaces))
    }

    /// Passes `result` through, auditing a client error as a refused restore into `target`.
    async fn audited_restore<T>(
        &self,
        actor: &Actor,
        target: &Cluster,
        result: Result<T>,
    ) -> Result<T> {
        self.guard
            .audited(
                actor,
                action::BACKUP_RESTORE,
                target.name.as_str(),
                Some(target.tenant_id),
                result,
            )
            .await
    }

    /// The backup's objects, with its Secrets when it kept them.
    async fn objects_of(&self, backup: &Backup) -> Result<Vec<Value>> {
        let bytes = self.archives().get(backup.cluster_id, backup.id).await?;
        let archive = tokio::task::spawn_blocking(move || read_archive(&bytes))
            .await
            .map_err(|e| Error::Backend(format!("the archive reader stopped: {e}")))?
            .map_err(|e| Error::Conflict(e.to_string()))?;
        let mut objects: Vec<Value> = archive.objects.into_iter().map(|(_, o)| o).collect();
        if backup.include_secrets {
            let at = names::backup_secrets(backup.tenant_id, backup.id);
            let sealed = self.deps.vault.get(&at).await?.ok_or_else(|| {
                Error::Conflict("the backup's Secrets are no longer in the vault".into())
            })?;
            objects.extend(
                read_secrets_stream(sealed.expose()).map_err(|e| Error::Conflict(e.to_string()))?,
            );
        }
        Ok(objects)
    }

    /// What restoring the backup would do, asked of the cluster restored into; changes
    /// nothing.
    pub async fn restore_plan(
        &self,
        actor: &Actor,
        r: BackupRef<'_>,
        req: &RestoreRequest,
    ) -> Result<RestorePlan> {
        let (backup, target, namespaces) = self.restore_input(actor, r, req).await?;
        let result = async {
            if backup.kind == BackupKind::KeySpace {
                return Ok(RestorePlan {
                    key_space: Some(self.key_space_plan(&backup, &target).await?),
                    backup: backup.clone(),
                    target: target.clone(),
                    namespaces: Vec::new(),
                    items: Vec::new(),
                });
            }
            let objects = self.objects_of(&backup).await?;
            let (client, _) = self.admin.admin_client(&target).await?;
            let items = restore::plan(&client, objects, &namespaces)
                .await
                .map_err(workload_error)?;
            Ok(RestorePlan {
                backup: backup.clone(),
                target: target.clone(),
                namespaces: namespaces.clone(),
                items,
                key_space: None,
            })
        }
        .await;
        self.audited_restore(actor, &target, result).await
    }

    /// Queues the restore of a backup into its own cluster or another. A restore over a
    /// production cluster needs a second person's approval: Conflict, with guidance.
    pub async fn restore(
        &self,
        actor: &Actor,
        r: BackupRef<'_>,
        req: &RestoreRequest,
    ) -> Result<(Restore, Operation)> {
        let (backup, target, namespaces) = self.restore_input(actor, r, req).await?;
        if target.production {
            let error = Error::Conflict(format!(
                "{} is a production cluster: restoring over it needs a second person's \
                 approval. Ask for it (POST /api/v1/clusters/{}/approvals with action \
                 \"restore\", or \"Request restore\" on the restore page); an operator or \
                 tenant admin other than you approves it",
                target.name, target.id
            ));
            return self.audited_restore(actor, &target, Err(error)).await;
        }
        self.queue_restore(actor, backup, target, namespaces, None)
            .await
    }

    /// What a request to restore `backup_id` into `target` restores, checked as a restore by
    /// `actor` would be (refusals audited): the backup, the cluster, the namespaces.
    pub(crate) async fn check_restore(
        &self,
        actor: &Actor,
        backup_id: &str,
        target: &str,
        namespaces: &[String],
    ) -> Result<(Backup, Cluster, Vec<String>)> {
        let req = RestoreRequest {
            target: Some(target.to_owned()),
            namespaces: namespaces.to_vec(),
        };
        self.restore_input(actor, BackupRef::id(backup_id), &req)
            .await
    }

    /// Queues the restore `approval` asks for, approved by `actor`.
    pub(crate) async fn restore_approved(
        &self,
        actor: &Actor,
        approval: &Approval,
    ) -> Result<Operation> {
        let detail = approval
            .restore
            .as_ref()
            .ok_or_else(|| Error::Conflict("the request names no backup".into()))?;
        let (backup, target, namespaces) = self
            .check_restore(
                actor,
                &detail.backup_id.to_string(),
                &approval.cluster_id.to_string(),
                &detail.namespaces,
            )
            .await?;
        let (_, op) = self
            .queue_restore(actor, backup, target, namespaces, Some(approval))
            .await?;
        Ok(op)
    }

    /// Queues the restore of `backup` into `target` (both checked for `actor`).
    async fn queue_restore(
        &self,
        actor: &Actor,
        backup: Backup,
        target: Cluster,
        namespaces: Vec<String>,
        approval: Option<&Approval>,
    ) -> Result<(Restore, Operation)> {
        let result = async {
            if backup.kind == BackupKind::KeySpace {
                // Refused now, not in the worker, when the target keeps no key space (the
                // worker reaches it; here its kind says enough).
                let dumps = self
                    .deps
                    .registry
                    .get(target.provider_kind)
                    .is_some_and(|p| p.dumps_shared_storage());
                if !dumps {
                    return Err(Error::Invalid(ValidationError::new(
                        "target_cluster",
                        format!(
                            "{} keeps no key space in the shared etcd: a key-space backup \
                             is restored into a hosted cluster",
                            target.name
                        ),
                    )));
                }
            } else {
                // The archive must be here before a worker is told to read it.
                self.archives()
                    .require(backup.cluster_id, backup.id)
                    .await?;
            }
            let who = actor.to_string();
            let restore = Restore::new(target.tenant_id, target.id, &backup, namespaces, &who);
            let now = crate::clock::now();
            let op = Operation::new(
                target.id,
                OperationKind::Restore,
                Some(OperationTarget::Restore(restore.id)),
                &who,
                now,
                chrono::Duration::minutes(OPERATION_MINUTES),
            );
            let scope = if restore.namespaces.is_empty() {
                "everything".to_owned()
            } else {
                format!("namespaces {}", restore.namespaces.join(", "))
            };
            let by = match approval {
                Some(a) => format!("{}, approved by {who}", a.requested_by),
                None => who.clone(),
            };
            let event = ClusterEvent::new(
                target.id,
                Some(op.id),
                EventKind::State,
                format!(
                    "Restore of backup {} ({scope}) requested by {by}",
                    backup.id
                ),
                now,
            );
            let mut detail = format!("backup {} ({scope})", backup.id);
            if let Some(a) = approval {
                detail.push_str(&format!(
                    "; approved request {} of {}",
                    a.id, a.requested_by
                ));
            }
            let audit = AuditEvent::success(actor, action::BACKUP_RESTORE, target.name.as_str())
                .in_tenant(target.tenant_id)
                .with_detail(detail);
            self.deps
                .store
                .queue_restore(&restore, &op, &event, &audit)
                .await?;
            Ok((restore, op))
        }
        .await;
        self.audited_restore(actor, &target, result).await
    }

    /// A restore into a cluster, with its report once done.
    pub async fn restore_status(
        &self,
        actor: &Actor,
        cluster_id: &str,
        restore_id: &str,
    ) -> Result<Restore> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_VIEW)
            .await?;
        let id = Uuid::parse_str(restore_id.trim()).map_err(|_| Error::NotFound("restore"))?;
        match self.deps.store.restore(id).await {
            Ok(r) if r.cluster_id == cluster.id => Ok(r),
            Ok(_) => Err(Error::NotFound("restore")),
            Err(e) => Err(e),
        }
    }

    /// Runs the restore operation `op` names, into `cluster`.
    pub(crate) async fn run_restore(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: &Reporter,
    ) -> std::result::Result<String, WorkloadError> {
        let id = op.restore().map_err(WorkloadError::Refused)?;
        let restore = self.deps.store.restore(id).await.map_err(op_error)?;
        let backup = self
            .deps
            .store
            .backup(restore.backup_id)
            .await
            .map_err(op_error)?;
        if backup.kind == BackupKind::KeySpace {
            return self
                .restore_key_space(cluster, &restore, &backup, reporter)
                .await;
        }
        reporter.step("Reading the backup");
        reporter.progress(2);
        let objects = self.objects_of(&backup).await.map_err(op_error)?;
        let (client, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        reporter.step("Creating the objects, definitions first");
        let progress = |done: usize, of: usize| {
            let share = done.saturating_mul(90) / of.max(1);
            reporter.progress(5 + u8::try_from(share).unwrap_or(90));
        };
        let items = restore::restore(&client, objects, &restore.namespaces, &progress).await?;
        self.deps
            .store
            .finish_restore(id, Ok(&items), crate::clock::now())
            .await
            .map_err(op_error)?;
        let count = |f: crate::backup::Fate| items.iter().filter(|i| i.fate == f).count();
        use crate::backup::Fate;
        Ok(format!(
            "Restored backup {}: {} object(s) created, {} already there ({} different, left \
             as they are), {} failed, {} could not be restored",
            backup.id,
            count(Fate::Created),
            count(Fate::Unchanged) + count(Fate::Differs),
            count(Fate::Differs),
            count(Fate::Failed),
            count(Fate::Cannot)
        ))
    }

    /// Records a failed restore operation on its restore.
    pub(crate) async fn restore_failed(&self, op: &Operation, reason: &str) {
        let Ok(id) = op.restore() else { return };
        if let Err(e) = self
            .deps
            .store
            .finish_restore(id, Err(reason), crate::clock::now())
            .await
        {
            tracing::warn!(error = %e, "cannot record a failed restore");
        }
    }
}

/// The request's namespaces, sorted, when `backup` can be restored and holds them all.
fn restorable(backup: &Backup, req: &RestoreRequest) -> Result<Vec<String>> {
    let Some(summary) = &backup.summary else {
        return Err(Error::Conflict(format!(
            "backup {} cannot be restored: it is {}",
            backup.id, backup.state
        )));
    };
    let mut namespaces: Vec<String> = req
        .namespaces
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    if backup.kind == BackupKind::KeySpace && !namespaces.is_empty() {
        return Err(Error::Invalid(ValidationError::new(
            "namespaces",
            "a key-space backup is restored whole: choose no namespace",
        )));
    }
    if let Some(unknown) = namespaces.iter().find(|n| !summary.namespaces.contains(n)) {
        return Err(Error::Invalid(ValidationError::new(
            "namespaces",
            format!("the backup holds no namespace “{unknown}”"),
        )));
    }
    Ok(namespaces)
}
