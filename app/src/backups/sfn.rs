//! Reads of the backups section: identify the caller, call one use case, send the API's
//! types.

use leptos::prelude::*;

use crate::AppError;

/// A cluster's backups, newest first (tenant admins and operators).
#[server(prefix = "/sfn", endpoint = "cluster_backups")]
pub async fn cluster_backups(id: String) -> Result<Vec<kqueen_dto::backups::Backup>, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    Ok(k.backups()
        .list(&actor, &id)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// The restore page: the backup (of cluster `id`, or by its id alone when `id` is None: its
/// cluster may have been deleted), the clusters the caller may restore into, and the plan
/// for the chosen one when `plan` (a plan that cannot be made says why, on the page).
#[server(prefix = "/sfn", endpoint = "restore_page")]
pub async fn restore_page(
    id: Option<String>,
    backup: String,
    target: Option<String>,
    // Optional: an empty list travels as no field at all.
    namespaces: Option<Vec<String>>,
    plan: bool,
) -> Result<super::dto::RestorePageDto, AppError> {
    use kqueen_core::cluster::{ClusterFilter, ClusterState};
    use kqueen_core::policy::{check, Permission};
    use kqueen_core::BackupRef;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let r = match id.as_deref() {
        Some(cluster) => BackupRef::of(cluster, &backup),
        None => BackupRef::id(&backup),
    };
    let found = k.backups().get(&actor, r).await?;
    let own = match k
        .clusters()
        .cluster_detail(&actor, &found.cluster_id.to_string())
        .await
    {
        Ok(d) => Some(d.cluster),
        Err(kqueen_core::Error::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let ready = ClusterFilter {
        state: Some(ClusterState::Ready),
        ..Default::default()
    };
    let (clusters, _) = k
        .clusters()
        .list_clusters(&actor, &ready, kqueen_core::page::Page::new(500, 0))
        .await?;
    let mut targets: Vec<(String, String)> = own
        .iter()
        .map(|c| {
            (
                c.id.to_string(),
                format!("{}/{} (its own cluster)", c.tenant_slug, c.name),
            )
        })
        .collect();
    // A key space loads only into a hosted cluster's key space.
    let whole = found.kind == kqueen_core::backup::BackupKind::KeySpace;
    targets.extend(
        clusters
            .iter()
            .filter(|c| c.id != found.cluster_id)
            .filter(|c| !whole || c.provider_kind == kqueen_dto::kinds::ProviderKind::Hosted)
            .filter(|c| check(&actor, Permission::ManageBackups(c.tenant_id)).is_ok())
            .map(|c| (c.id.to_string(), format!("{}/{}", c.tenant_slug, c.name))),
    );
    let mut production = false;
    let (plan, plan_error) = if plan {
        let request = kqueen_core::RestoreRequest {
            target,
            namespaces: namespaces.unwrap_or_default(),
        };
        match k.backups().restore_plan(&actor, r, &request).await {
            Ok(p) => {
                production = p.target.production;
                (Some(p.into()), None)
            }
            Err(e) => (None, Some(e.public().message)),
        }
    } else {
        (None, None)
    };
    let cluster_name = match (&own, &found.summary) {
        (Some(c), _) => c.name.to_string(),
        (None, Some(s)) => s.cluster.clone(),
        (None, None) => "a deleted cluster".to_owned(),
    };
    Ok(super::dto::RestorePageDto {
        cluster_id: own.map(|c| c.id.to_string()),
        cluster_name,
        backup: found.into(),
        targets,
        plan,
        plan_error,
        target_production: production,
    })
}

/// The backups the caller manages, of live and deleted clusters (of tenant `tenant` when
/// given), newest first.
#[server(prefix = "/sfn", endpoint = "all_backups")]
pub async fn all_backups(
    tenant: Option<String>,
) -> Result<Vec<kqueen_dto::backups::ListedBackup>, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    Ok(k.backups()
        .all(&actor, tenant.as_deref())
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// A cluster's backup schedule, if it has one (tenant admins and operators).
#[server(prefix = "/sfn", endpoint = "backup_schedule")]
pub async fn backup_schedule(
    id: String,
) -> Result<Option<kqueen_dto::backups::BackupSchedule>, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    Ok(k.backups().schedule(&actor, &id).await?.map(Into::into))
}
