//! What a provisioner call needs, read from the store and the vault, and the secrets a deleted
//! cluster leaves behind.

use std::collections::BTreeMap;
use std::path::Path;

use super::checkpoint::Checkpoint;
use crate::cluster::{Cluster, Operation, OperationKind, OperationState, Provider};
use crate::deps::Deps;
use crate::provisioner::OpContext;
use crate::vault::{names, Secret, Vault};
use crate::{Error, Result};

/// The context of a provisioner call for `op` on `cluster`, its working directory under
/// `work_root`.
pub(crate) async fn op_context(
    deps: &Deps,
    cluster: &Cluster,
    op: &Operation,
    checkpoint: &Checkpoint,
    work_root: &Path,
) -> Result<OpContext> {
    let mut ctx = cluster_context(deps, cluster, work_root).await?;
    ctx.operation_id = op.id;
    if op.kind != OperationKind::Create {
        ctx.admin_kubeconfig = admin_kubeconfig(deps, cluster).await?;
    }
    if op.kind == OperationKind::Delete {
        let ops = deps.store.operations_of(cluster.id, 50).await?;
        if let Some(create) = ops.iter().find(|o| o.kind == OperationKind::Create) {
            if create.state != OperationState::Succeeded {
                ctx.create_checkpoint = Checkpoint::read(&create.checkpoint)
                    .map_err(|why| Error::Corrupt(format!("the unfinished create: {why}")))?
                    .provisioner;
            }
        }
    }
    ctx.checkpoint = checkpoint.provisioner.clone();
    Ok(ctx)
}

/// The context of a call about `cluster` outside any operation (resume after a restart):
/// its parameters, settings, secrets and state.
pub(crate) async fn cluster_context(
    deps: &Deps,
    cluster: &Cluster,
    work_root: &Path,
) -> Result<OpContext> {
    let provider = deps.store.provider(cluster.provider_id).await?;
    let mut ctx = OpContext::new(
        cluster.name.as_str(),
        &cluster.tenant_slug,
        work_root.join(cluster.id.to_string()),
    );
    ctx.cluster_id = cluster.id;
    ctx.params = cluster.parameters.clone();
    ctx.provider_config = provider.config.clone();
    ctx.provider_secrets = provider_secrets(&deps.vault, &provider).await?;
    if let Some(p) = deps.registry.get(provider.kind) {
        for spec in p.cluster_schema().specs().iter().filter(|s| s.secret) {
            let at = names::cluster_param(cluster.tenant_id, cluster.id, &spec.name);
            if let Some(s) = deps.vault.get(&at).await? {
                ctx.param_secrets.insert(spec.name.clone(), s);
            }
        }
    }
    ctx.cluster_state = cluster.provisioner_state.clone();
    ctx.cluster_vault = Some(crate::provisioner::ClusterVault::new(
        deps.vault.clone(),
        cluster.tenant_id,
        cluster.id,
    ));
    Ok(ctx)
}

/// The cluster's stored admin kubeconfig.
pub(crate) async fn admin_kubeconfig(deps: &Deps, cluster: &Cluster) -> Result<Option<Secret>> {
    deps.vault
        .get(&names::cluster_kubeconfig(cluster.tenant_id, cluster.id))
        .await
}

/// The stored secret fields of a provider's settings.
pub(crate) async fn provider_secrets(
    vault: &Vault,
    provider: &Provider,
) -> Result<BTreeMap<String, Secret>> {
    let mut out = BTreeMap::new();
    for field in &provider.secret_fields {
        if let Some(s) = vault
            .get(&names::provider_field(provider.id, field))
            .await?
        {
            out.insert(field.clone(), s);
        }
    }
    Ok(out)
}

/// Removes a deleted cluster's secrets from the vault: its kubeconfig, its secret
/// parameters and what its provisioner kept. Best effort: a failure is logged, the cluster stays deleted.
pub(crate) async fn forget_cluster_secrets(deps: &Deps, cluster: &Cluster) {
    let mut refs = vec![names::cluster_kubeconfig(cluster.tenant_id, cluster.id)];
    if let Some(p) = deps.registry.get(cluster.provider_kind) {
        for spec in p.cluster_schema().specs().iter().filter(|s| s.secret) {
            refs.push(names::cluster_param(
                cluster.tenant_id,
                cluster.id,
                &spec.name,
            ));
        }
        for name in p.cluster_secret_names() {
            refs.push(names::cluster_provisioner_secret(
                cluster.tenant_id,
                cluster.id,
                name,
            ));
        }
    }
    for r in refs {
        if let Err(e) = deps.vault.delete(&r).await {
            tracing::warn!(error = %e, "removing a deleted cluster's secret failed");
        }
    }
}
