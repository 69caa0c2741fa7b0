//! Reads of the applications' pages: identify the caller, call one use case, map to DTOs.

use leptos::prelude::*;

use crate::apps::dto::{AppPageDto, ClusterAppsDto, NewAppPageDto, PreviewPageDto};
use crate::AppError;

/// The versions deployed in a cluster.
#[server(prefix = "/sfn", endpoint = "cluster_apps")]
pub async fn cluster_apps(id: String) -> Result<ClusterAppsDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let mut versions: Vec<kqueen_dto::apps::Application> = k
        .apps()
        .list(&actor, &id)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    versions.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    Ok(ClusterAppsDto { versions })
}

/// The deploy form of a cluster, with the refused form kept for it.
#[server(prefix = "/sfn", endpoint = "new_app")]
pub async fn new_app_page(id: String) -> Result<NewAppPageDto, AppError> {
    use kqueen_core::cluster::ClusterState;
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let d = k.clusters().cluster_detail(&actor, &id).await?;
    Ok(NewAppPageDto {
        cluster_id: d.cluster.id.to_string(),
        cluster_name: d.cluster.name.to_string(),
        ready: d.cluster.state == ClusterState::Ready,
        can_deploy: check(&actor, Permission::ManageClusters(d.cluster.tenant_id)).is_ok(),
        kept: crate::kept::take().await,
    })
}

/// The dry run the caller previewed last in this cluster.
#[server(prefix = "/sfn", endpoint = "app_preview")]
pub async fn app_preview_page(id: String) -> Result<PreviewPageDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let d = k.clusters().cluster_detail(&actor, &id).await?;
    let cluster_id = d.cluster.id.to_string();
    let preview = super::pending::get(&cluster_id).await.map(|p| p.preview);
    Ok(PreviewPageDto {
        cluster_id,
        cluster_name: d.cluster.name.to_string(),
        preview,
    })
}

/// A version with the live rollout of its workloads and its latest operation.
#[server(prefix = "/sfn", endpoint = "app")]
pub async fn app_page(id: String, app: String) -> Result<AppPageDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let status: kqueen_dto::apps::ApplicationStatus =
        k.apps().status(&actor, &id, &app).await?.into();
    let d = k.clusters().cluster_detail(&actor, &id).await?;
    let app_id = status.application.id.clone();
    let operation = d
        .operations
        .into_iter()
        .find(|o| o.application().is_ok_and(|a| a.to_string() == app_id))
        .map(Into::into);
    let busy = matches!(status.application.state.as_str(), "deploying" | "deleting");
    Ok(AppPageDto {
        cluster_id: d.cluster.id.to_string(),
        cluster_name: d.cluster.name.to_string(),
        can_manage: check(&actor, Permission::ManageClusters(d.cluster.tenant_id)).is_ok(),
        status,
        operation,
        busy,
    })
}
