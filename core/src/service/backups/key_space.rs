//! Key-space backups of hosted clusters: the cluster's whole key space in the shared etcd,
//! copied at one revision with the cluster's own etcd user (etcd refuses it every other
//! tenant's keys) and sealed in the vault; restored into the same or another hosted cluster,
//! whose API server then serves the same objects. The archive holds the summary and the list
//! of keys, never a value.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::api::{Api, ListParams, Patch, PatchParams};

use super::Backups;
use crate::backup::archive::write_key_space_archive;
use crate::backup::{Backup, BackupSummary, KeySpaceCopy, Restore, VOLUME_GUIDANCE};
use crate::cluster::Cluster;
use crate::hosted::dump::{KeySpaceDump, Loaded};
use crate::provisioner::{OpContext, ProvisionError, Provisioner, Reporter};
use crate::service::apps::op_error;
use crate::vault::{names, Secret};
use crate::workloads::WorkloadError;
use crate::{Error, Result, ValidationError};

/// The type of the Secrets that hold a ServiceAccount's long-lived token.
const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

fn provision_error(e: ProvisionError) -> WorkloadError {
    match e {
        ProvisionError::Transient(m) => WorkloadError::Transient(m),
        other => WorkloadError::Refused(other.to_string()),
    }
}

impl Backups {
    /// The provisioner of `cluster`, when it copies key spaces, and the cluster's context.
    pub(super) async fn key_space_of(
        &self,
        cluster: &Cluster,
    ) -> Result<(Arc<dyn Provisioner>, OpContext)> {
        let provisioner = self
            .deps
            .registry
            .get(cluster.provider_kind)
            .filter(|p| p.dumps_shared_storage())
            .ok_or_else(|| {
                Error::Invalid(ValidationError::new(
                    "target_cluster",
                    format!(
                        "{} keeps no key space in the shared etcd: a key-space backup is \
                         restored into a hosted cluster",
                        cluster.name
                    ),
                ))
            })?;
        let work_root = self.deps.settings.work_dir.clone();
        let ctx = crate::engine::context::cluster_context(&self.deps, cluster, &work_root).await?;
        Ok((provisioner, ctx))
    }

    /// The key space a key-space backup copied.
    async fn dump_of(&self, backup: &Backup) -> Result<KeySpaceDump> {
        let at = names::backup_key_space(backup.tenant_id, backup.id);
        let sealed = self.deps.vault.get(&at).await?.ok_or_else(|| {
            Error::Conflict("the backup's key space is no longer in the vault".into())
        })?;
        KeySpaceDump::decode(sealed.expose()).map_err(|e| Error::Conflict(e.to_string()))
    }

    /// Takes the key-space backup `backup` of `cluster`.
    pub(super) async fn run_key_space(
        &self,
        cluster: &Cluster,
        backup: &Backup,
        reporter: &Reporter,
    ) -> std::result::Result<String, WorkloadError> {
        reporter.step("Copying the cluster's key space in the shared etcd at one revision");
        reporter.progress(5);
        let (provisioner, ctx) = self.key_space_of(cluster).await.map_err(op_error)?;
        let dump = provisioner
            .dump_shared_storage(&ctx)
            .await
            .map_err(provision_error)?;
        let version = match self.admin.admin_client(cluster).await {
            Ok((client, _)) => client.apiserver_version().await.ok().map(|v| v.git_version),
            Err(_) => None,
        };
        reporter.step("Sealing the copy in the vault");
        reporter.progress(60);
        let copy = KeySpaceCopy {
            revision: dump.revision,
            keys: dump.entries.len() as u64,
            bytes: dump.bytes(),
        };
        // What the summary and the archive need, read first: the dump (up to 256 MiB) then
        // moves into the encoder, not copied.
        let (namespaces, listing) = (dump.namespaces(), dump.listing());
        let encoded = tokio::task::spawn_blocking(move || dump.encode())
            .await
            .map_err(|e| WorkloadError::Transient(format!("the encoder stopped: {e}")))?;
        self.deps
            .vault
            .put(
                &names::backup_key_space(cluster.tenant_id, backup.id),
                &Secret::new(encoded),
            )
            .await
            .map_err(op_error)?;
        let summary = BackupSummary {
            cluster: cluster.name.as_str().to_owned(),
            tenant: cluster.tenant_slug.clone(),
            taken_at: crate::clock::now(),
            kubernetes_version: version,
            objects: 0,
            secrets: 0,
            secrets_left_out: 0,
            namespaces,
            kinds: Vec::new(),
            left_out: Vec::new(),
            volumes: Vec::new(),
            volume_guidance: VOLUME_GUIDANCE.into(),
            snapshots: None,
            key_space: Some(copy),
        };
        reporter.step("Writing the archive (the summary and the list of keys)");
        reporter.progress(85);
        let written = summary.clone();
        let bytes = tokio::task::spawn_blocking(move || write_key_space_archive(&written, listing))
            .await
            .map_err(|e| WorkloadError::Transient(format!("the archive writer stopped: {e}")))?
            .map_err(|e| WorkloadError::Refused(e.to_string()))?;
        self.archives()
            .put(cluster.id, backup.id, &bytes)
            .await
            .map_err(op_error)?;
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        self.deps
            .store
            .finish_backup(backup.id, Ok((&summary, size)), crate::clock::now())
            .await
            .map_err(op_error)?;
        Ok(format!(
            "Copied the key space at etcd revision {}: {} key(s), {} KiB, in {} namespace(s), \
             sealed in the vault",
            copy.revision,
            copy.keys,
            copy.bytes.div_ceil(1024),
            summary.namespaces.len()
        ))
    }

    /// What loading the key-space backup into `target` would change; changes nothing.
    pub(super) async fn key_space_plan(&self, backup: &Backup, target: &Cluster) -> Result<Loaded> {
        let (provisioner, ctx) = self.key_space_of(target).await?;
        let dump = self.dump_of(backup).await?;
        let current = provisioner
            .dump_shared_storage(&ctx)
            .await
            .map_err(|e| Error::Backend(e.to_string()))?;
        Ok(dump.changes_from(&current).counts())
    }

    /// Loads the key-space backup `backup` into `target` (restore `restore`).
    pub(super) async fn restore_key_space(
        &self,
        target: &Cluster,
        restore: &Restore,
        backup: &Backup,
        reporter: &Reporter,
    ) -> std::result::Result<String, WorkloadError> {
        reporter.step("Reading the copy of the key space");
        reporter.progress(5);
        let dump = self.dump_of(backup).await.map_err(op_error)?;
        let (provisioner, ctx) = self.key_space_of(target).await.map_err(op_error)?;
        reporter.step("Loading it into the cluster's key space (read-only meanwhile)");
        reporter.progress(20);
        let loaded = provisioner
            .load_shared_storage(&ctx, &dump)
            .await
            .map_err(provision_error)?;
        let renewed = if target.id == backup.cluster_id {
            0
        } else {
            // Their tokens were signed by the other cluster's key: emptied, the controller
            // manager signs new ones.
            reporter.step("Asking for new ServiceAccount tokens");
            reporter.progress(80);
            self.renew_tokens(target).await?
        };
        self.deps
            .store
            .finish_restore(restore.id, Ok(&[]), crate::clock::now())
            .await
            .map_err(op_error)?;
        Ok(format!(
            "Restored key-space backup {} (etcd revision {}): {} key(s) written, {} unchanged, \
             {} removed{}",
            backup.id,
            dump.revision,
            loaded.written,
            loaded.unchanged,
            loaded.removed,
            match renewed {
                0 => String::new(),
                n => format!("; {n} ServiceAccount token(s) to be signed again"),
            }
        ))
    }

    /// Empties the token of every ServiceAccount token Secret of `cluster`; returns how many.
    async fn renew_tokens(&self, cluster: &Cluster) -> std::result::Result<usize, WorkloadError> {
        let (client, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        let secrets: Api<KubeSecret> = Api::all(client.clone());
        let listed = secrets
            .list(&ListParams::default().fields(&format!("type={TOKEN_SECRET_TYPE}")))
            .await
            .map_err(|e| WorkloadError::Transient(format!("cannot list the token Secrets: {e}")))?;
        let emptied = serde_json::json!({"data": {"token": null}});
        for s in &listed.items {
            let (Some(ns), Some(name)) = (&s.metadata.namespace, &s.metadata.name) else {
                continue;
            };
            Api::<KubeSecret>::namespaced(client.clone(), ns)
                .patch(name, &PatchParams::default(), &Patch::Merge(&emptied))
                .await
                .map_err(|e| {
                    WorkloadError::Transient(format!("cannot renew the token of {ns}/{name}: {e}"))
                })?;
        }
        Ok(listed.items.len())
    }
}
