//! The work of addon operations, run by the engine with KQueen's credential: an apply
//! renders the definition with the recorded parameters and applies it as the addon's
//! ApplySet (pruning what an older version had and this one has not); a removal deletes
//! every member of the set.

use super::Addons;
use crate::cluster::{Cluster, Operation, OperationKind};
use crate::provisioner::Reporter;
use crate::service::apps::op_error;
use crate::workloads::addons::installed::{AddonOutcome, InstalledAddon};
use crate::workloads::addons::state::placement;
use crate::workloads::addons::AddonDefinition;
use crate::workloads::apply::{apply_set, delete_set};
use crate::workloads::refs::ObjectRef;
use crate::workloads::resolve::resolve;
use crate::workloads::WorkloadError;

impl Addons {
    pub(crate) async fn run(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: &Reporter,
    ) -> Result<String, WorkloadError> {
        let name = op.addon().map_err(WorkloadError::Refused)?.to_owned();
        let record = self
            .deps
            .store
            .installed_addons(cluster.id)
            .await
            .map_err(op_error)?
            .into_iter()
            .find(|a| a.name == name)
            .ok_or_else(|| WorkloadError::Refused(format!("{name} is not recorded here")))?;
        let def = self.definition_of(&record).await?;
        let (client, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        let set = def.apply_set();
        let objects = def
            .render(&record.parameters)
            .map_err(WorkloadError::Invalid)?;
        let resolved = resolve(
            &client,
            &objects,
            &placement(&def, cluster.name.as_str()),
            &set,
        )
        .await?;
        let report = |line: &str| reporter.log(line);
        match op.kind {
            OperationKind::AddonRemove => {
                reporter.step(format!("Removing {name}"));
                // Also what a failed install applied before it failed (found by label
                // among the kinds the definition holds).
                let mut known: Vec<ObjectRef> = record.objects.clone();
                known.extend(resolved.iter().map(|r| r.target.clone()));
                let gone = delete_set(&client, &set, &known, &report).await?;
                self.deps
                    .store
                    .finish_addon(
                        cluster.id,
                        &name,
                        AddonOutcome::Removed,
                        crate::clock::now(),
                    )
                    .await
                    .map_err(op_error)?;
                Ok(format!("Removed {name}: {} object(s) deleted", gone.len()))
            }
            _ => {
                reporter.step(format!(
                    "Applying {name} {} ({} objects)",
                    def.version,
                    resolved.len()
                ));
                reporter.progress(10);
                let applied = apply_set(&client, &set, &resolved, &record.objects, &report).await?;
                self.deps
                    .store
                    .finish_addon(
                        cluster.id,
                        &name,
                        AddonOutcome::Applied(&applied),
                        crate::clock::now(),
                    )
                    .await
                    .map_err(op_error)?;
                Ok(format!(
                    "{name} {} applied: {} object(s)",
                    def.version,
                    applied.len()
                ))
            }
        }
    }

    /// Records a failed operation on its addon.
    pub(crate) async fn failed(&self, op: &Operation, reason: &str) {
        // No addon to record it on: the operation's own timeline entry says why.
        let Ok(name) = op.addon() else {
            return;
        };
        if let Err(e) = self
            .deps
            .store
            .finish_addon(
                op.cluster_id,
                name,
                AddonOutcome::Failed(reason),
                crate::clock::now(),
            )
            .await
        {
            tracing::warn!(error = %e, "cannot record a failed addon operation");
        }
    }

    async fn definition_of(
        &self,
        record: &InstalledAddon,
    ) -> Result<AddonDefinition, WorkloadError> {
        self.definitions()
            .await
            .map_err(op_error)?
            .into_iter()
            .find(|d| d.name == record.name && d.version == record.version)
            .ok_or_else(|| {
                WorkloadError::Refused(format!(
                    "{} {} is no longer in the catalog",
                    record.name, record.version
                ))
            })
    }
}
