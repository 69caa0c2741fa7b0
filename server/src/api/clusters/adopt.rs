//! Adoption (operators): the clusters a provider's infrastructure already holds (a Cluster
//! API management cluster's Clusters), and taking one into a tenant. The take-over runs as
//! the cluster's create operation, so it answers like a cluster request: 202 with both.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::Actor;
use kqueen_dto::adopt::{AdoptRequest, AdoptableCluster};

use super::dto::ClusterAccepted;
use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// The clusters a provider's infrastructure holds, adopted or not (operators). 409: the
/// provider's kind has no existing clusters, or its infrastructure (the management cluster)
/// cannot be listed; the message says which.
#[utoipa::path(get, path = "/api/v1/providers/{name}/clusters", tag = "providers",
    params(("name" = String, Path, description = "The provider's name or id")),
    responses((status = 200, body = Vec<AdoptableCluster>),
              (status = 401, body = ErrorOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
#[tracing::instrument(skip_all, fields(provider = %name))]
pub async fn adoptable_clusters(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<AdoptableCluster>>> {
    let found = state
        .kqueen
        .clusters()
        .adoptable_clusters(&actor, &name)
        .await?;
    Ok(Json(found.into_iter().map(Into::into).collect()))
}

/// Adopts an existing cluster (a `reference` from `GET /api/v1/providers/{name}/clusters`)
/// into a tenant, held to a template of the same provider (operators). Answers at once (202):
/// the take-over runs in the background; follow it at /api/v1/clusters/{id}.
#[utoipa::path(post, path = "/api/v1/clusters/adopt", tag = "clusters", request_body = AdoptRequest,
    responses((status = 202, body = ClusterAccepted), (status = 400, body = ErrorOut),
              (status = 401, body = ErrorOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
#[tracing::instrument(skip_all, fields(tenant = %input.tenant, reference = %input.reference))]
pub async fn adopt_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<AdoptRequest>,
) -> ApiResult<(StatusCode, Json<ClusterAccepted>)> {
    let (cluster, op) = state
        .kqueen
        .clusters()
        .adopt_cluster(&actor, input.into())
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(ClusterAccepted {
            cluster: cluster.into_dto_with(&op),
            operation: op.into(),
        }),
    ))
}
