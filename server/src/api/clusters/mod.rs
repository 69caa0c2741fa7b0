//! Clusters: request, list, view, timeline, scale, upgrade, delete, kubeconfigs, access.
//! Providers, templates, adoption (`adopt.rs`), kubectl's credential (`credential.rs`) and
//! worker nodes (`join.rs`) are in their own files; what they read in `dto.rs`, `provider_in.rs` and `template_in.rs`. Quotas are the
//! tenants' (`api/quotas.rs`).

mod adopt;
mod credential;
mod dto;
mod join;
mod provider_in;
mod providers;
mod template_in;
mod templates;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::cluster::{ClusterFilter, ClusterRequest, ClusterState};
use kqueen_core::page::Page;
use kqueen_core::provisioner::schema::params_from_json;
use kqueen_core::{Actor, Error, ValidationError};

use crate::api::{ApiJson, ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;

pub use adopt::*;
pub use credential::*;
pub use dto::*;
pub use join::*;
pub use providers::*;
pub use templates::*;

/// Clusters the caller may see, filtered and paginated.
#[utoipa::path(get, path = "/api/v1/clusters", tag = "clusters", params(ClusterQuery),
    responses((status = 200, body = ClusterList), (status = 400, body = ErrorOut)))]
pub async fn list_clusters(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(q): ApiQuery<ClusterQuery>,
) -> ApiResult<Json<ClusterList>> {
    let state_filter = match q.state.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(ClusterState::parse(s).ok_or_else(|| {
            Error::Invalid(ValidationError::new(
                "state",
                "must be provisioning, ready, updating, deleting, error or unknown",
            ))
        })?),
        None => None,
    };
    let filter = ClusterFilter {
        tenant: q.tenant.filter(|t| !t.is_empty()),
        state: state_filter,
        name: q.name,
    };
    let page = Page::requested(q.limit, q.offset);
    let (items, total) = state
        .kqueen
        .clusters()
        .list_clusters(&actor, &filter, page)
        .await?;
    Ok(Json(ClusterList {
        items: items.into_iter().map(ClusterOut::from).collect(),
        total,
        limit: page.limit(),
        offset: page.offset(),
    }))
}

/// Requests a cluster from a template. Answers at once (202): provisioning runs in the
/// background; follow it at /api/v1/clusters/{id}.
#[utoipa::path(post, path = "/api/v1/clusters", tag = "clusters", request_body = ClusterIn,
    responses((status = 202, body = ClusterAccepted), (status = 400, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn create_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<ClusterIn>,
) -> ApiResult<(StatusCode, Json<ClusterAccepted>)> {
    let req = ClusterRequest {
        tenant: input.tenant,
        name: input.name,
        template: input.template,
        parameters: params_from_json(&input.parameters).map_err(Error::from)?,
    };
    let (cluster, op) = state.kqueen.clusters().request_cluster(&actor, req).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(ClusterAccepted {
            cluster: cluster.into_dto_with(&op),
            operation: op.into(),
        }),
    ))
}

/// A cluster: state, progress, current step, operations and timeline.
#[utoipa::path(get, path = "/api/v1/clusters/{id}", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = ClusterDetailOut), (status = 404, body = ErrorOut)))]
pub async fn get_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<ClusterDetailOut>> {
    Ok(Json(
        state
            .kqueen
            .clusters()
            .cluster_detail(&actor, &id)
            .await?
            .into(),
    ))
}

/// Timeline entries, optionally only those after an event id (for polling).
#[utoipa::path(get, path = "/api/v1/clusters/{id}/events", tag = "clusters",
    params(("id" = uuid::Uuid, Path), EventsQuery),
    responses((status = 200, body = Vec<EventOut>), (status = 404, body = ErrorOut)))]
pub async fn cluster_events(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<EventsQuery>,
) -> ApiResult<Json<Vec<EventOut>>> {
    let events = state
        .kqueen
        .clusters()
        .cluster_events(&actor, &id, q.after)
        .await?;
    Ok(Json(events.into_iter().map(Into::into).collect()))
}

/// Deletes a cluster (in the background; answers with the operation). A production cluster
/// is deleted only through an approved request (`POST /api/v1/clusters/{id}/approvals`).
#[utoipa::path(delete, path = "/api/v1/clusters/{id}", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    responses((status = 202, body = OperationOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Busy with another operation, or a production cluster (ask for approval)")))]
pub async fn delete_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state.kqueen.clusters().delete_cluster(&actor, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// Changes the node count (provisioners that can scale).
#[utoipa::path(post, path = "/api/v1/clusters/{id}/scale", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    request_body = ScaleIn,
    responses((status = 202, body = OperationOut), (status = 400, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn scale_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ScaleIn>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state
        .kqueen
        .clusters()
        .scale_cluster(&actor, &id, input.node_count)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// Upgrades Kubernetes (provisioners that can upgrade).
#[utoipa::path(post, path = "/api/v1/clusters/{id}/upgrade", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    request_body = UpgradeIn,
    responses((status = 202, body = OperationOut), (status = 400, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn upgrade_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<UpgradeIn>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state
        .kqueen
        .clusters()
        .upgrade_cluster(&actor, &id, &input.kubernetes_version)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// Replaces the machine of a node that is not Ready (tenant admins and operators; providers
/// that can): the node is removed from the cluster, then the provisioner brings a new
/// machine (a command provider's `replace_command`, Cluster API deletes the node's Machine).
#[utoipa::path(post, path = "/api/v1/clusters/{id}/nodes/{node}/replace", tag = "clusters",
    params(("id" = uuid::Uuid, Path), ("node" = String, Path, description = "The node's name")),
    responses((status = 202, body = OperationOut),
              (status = 400, body = ErrorOut, description = "Not a node name, or not a node of the cluster"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The node is Ready, the provider cannot replace nodes, or the cluster is busy")))]
pub async fn replace_node(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, node)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state
        .kqueen
        .clusters()
        .replace_node(&actor, &id, &node)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// The caller's kubeconfig as YAML: the admin kubeconfig for operators, a per-user,
/// short-lived one for tenant members. Every download is audited.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/kubeconfig", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/yaml", body = Object,
        description = "A kubeconfig: a YAML mapping (apiVersion, kind, clusters, users, contexts)"),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn kubeconfig(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let d = state.kqueen.access().kubeconfig(&actor, &id).await?;
    Ok(kubeconfig_response(d))
}

/// A kubeconfig as a file download.
pub fn kubeconfig_response(d: kqueen_core::KubeconfigDownload) -> Response {
    let name: String = d
        .file_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect();
    (
        [
            (header::CONTENT_TYPE, "application/yaml".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        d.yaml.expose().to_vec(),
    )
        .into_response()
}

/// Revokes a user's access to a cluster: deletes their ServiceAccount, so every kubeconfig
/// issued to them stops working.
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/access", tag = "clusters",
    params(("id" = uuid::Uuid, Path), AccessQuery),
    responses((status = 204), (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn revoke_access(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<AccessQuery>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .access()
        .revoke_access(&actor, &id, q.user.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
