//! The work of a backup operation, run by the engine: read everything the cluster holds
//! with KQueen's admin credential, seal the Secrets (when asked for) in the vault, write the
//! archive and keep it.

use super::Backups;
use crate::backup::archive::{secrets_stream, write_archive};
use crate::backup::collect::collect;
use crate::backup::snapshots::snapshot_claims;
use crate::backup::{BackupKind, BackupSummary, VOLUME_GUIDANCE};
use crate::cluster::{Cluster, Operation};
use crate::provisioner::Reporter;
use crate::service::apps::op_error;
use crate::vault::{names, Secret};
use crate::workloads::WorkloadError;

impl Backups {
    /// Takes the backup operation `op` names, of `cluster`.
    pub(crate) async fn run(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: &Reporter,
    ) -> Result<String, WorkloadError> {
        let id = op.backup().map_err(WorkloadError::Refused)?;
        let backup = self.deps.store.backup(id).await.map_err(op_error)?;
        if backup.kind == BackupKind::KeySpace {
            return self.run_key_space(cluster, &backup, reporter).await;
        }
        reporter.step("Reading what the cluster holds");
        reporter.progress(2);
        let (client, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        let version = client.apiserver_version().await.ok().map(|v| v.git_version);
        let progress = |done: usize, of: usize, _what: &str| {
            let share = done.saturating_mul(85) / of.max(1);
            reporter.progress(5 + u8::try_from(share).unwrap_or(85));
        };
        let collected = collect(&client, backup.include_secrets, &progress).await?;
        let snapshots = if backup.snapshot_volumes {
            reporter.step("Asking the cluster for VolumeSnapshots of its claims");
            Some(snapshot_claims(&client, id, &collected.volumes).await?)
        } else {
            None
        };
        let summary = BackupSummary {
            cluster: cluster.name.as_str().to_owned(),
            tenant: cluster.tenant_slug.clone(),
            taken_at: crate::clock::now(),
            kubernetes_version: version,
            objects: u32::try_from(collected.objects.len()).unwrap_or(u32::MAX),
            secrets: u32::try_from(collected.secrets.len()).unwrap_or(u32::MAX),
            secrets_left_out: collected.secrets_left_out,
            namespaces: collected.namespaces,
            kinds: collected.kinds,
            left_out: collected.left_out,
            volumes: collected.volumes,
            volume_guidance: VOLUME_GUIDANCE.into(),
            snapshots,
            key_space: None,
        };
        if backup.include_secrets {
            reporter.step("Sealing the Secrets in the vault");
            let stream = secrets_stream(&collected.secrets)
                .map_err(|e| WorkloadError::Refused(e.to_string()))?;
            self.deps
                .vault
                .put(
                    &names::backup_secrets(cluster.tenant_id, id),
                    &Secret::new(stream),
                )
                .await
                .map_err(op_error)?;
        }
        reporter.step("Writing the archive");
        reporter.progress(92);
        let objects = collected.objects;
        let written = summary.clone();
        let bytes = tokio::task::spawn_blocking(move || write_archive(&written, &objects))
            .await
            .map_err(|e| WorkloadError::Transient(format!("the archive writer stopped: {e}")))?
            .map_err(|e| WorkloadError::Refused(e.to_string()))?;
        self.archives()
            .put(cluster.id, id, &bytes)
            .await
            .map_err(op_error)?;
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        self.deps
            .store
            .finish_backup(id, Ok((&summary, size)), crate::clock::now())
            .await
            .map_err(op_error)?;
        let snapshotted = match &summary.snapshots {
            Some(s) => format!(
                "; {} VolumeSnapshot(s) asked for",
                s.records.iter().filter(|r| r.created).count()
            ),
            None => String::new(),
        };
        Ok(format!(
            "Backed up {} object(s) in {} namespace(s){}; {} volume object(s) recorded{snapshotted}; \
             archive of {} KiB",
            summary.objects,
            summary.namespaces.len(),
            if backup.include_secrets {
                format!(", {} Secret(s) sealed in the vault", summary.secrets)
            } else {
                format!(", {} Secret(s) left out", summary.secrets_left_out)
            },
            summary.volumes.len(),
            size.div_ceil(1024)
        ))
    }

    /// Records a failed backup operation on its backup.
    pub(crate) async fn failed(&self, op: &Operation, reason: &str) {
        let Ok(id) = op.backup() else { return };
        if let Err(e) = self
            .deps
            .store
            .finish_backup(id, Err(reason), crate::clock::now())
            .await
        {
            tracing::warn!(error = %e, "cannot record a failed backup");
        }
    }
}
