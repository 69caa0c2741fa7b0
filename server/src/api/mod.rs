//! REST API `/api/v1` (JSON), described by an OpenAPI document generated from the handlers at
//! `/api/v1/openapi.json`. Authentication: `Authorization: Bearer <personal API token>`, or
//! the portal's session cookie.

mod addons;
mod approvals;
mod apps;
mod audit;
mod autoscaling;
mod backup_ids;
mod backups;
mod clusters;
mod device_login;
mod dto;
mod extract;
mod fleet;
mod openapi;
mod provider_schemas;
mod quotas;
mod rollouts;
mod schemas;
mod tenants;
mod tokens;
mod users;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub use backups::archive_response;
pub use clusters::kubeconfig_response;
pub use dto::*;
pub use extract::{ApiJson, ApiQuery};

#[derive(OpenApi)]
#[openapi(
    info(title = "KQueen API", version = "1", description = "Multi-cloud Kubernetes cluster manager"),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "identity"), (name = "tenants"), (name = "users"), (name = "tokens"), (name = "audit"),
         (name = "providers"), (name = "templates"), (name = "clusters"), (name = "applications"), (name = "backups"), (name = "approvals"), (name = "rollouts"), (name = "addons"), (name = "fleet"))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The API routes and the OpenAPI document describing them.
pub fn router() -> Router<AppState> {
    let (router, doc) = OpenApiRouter::<AppState>::with_openapi(ApiDoc::openapi())
        .routes(routes!(tenants::whoami))
        .routes(routes!(tenants::list_tenants, tenants::create_tenant))
        .routes(routes!(tenants::get_tenant))
        .routes(routes!(tenants::list_members))
        .routes(routes!(tenants::put_member, tenants::remove_member))
        .routes(routes!(users::list_users, users::create_user))
        .routes(routes!(users::invite_user))
        .routes(routes!(tokens::list_tokens, tokens::create_token))
        .routes(routes!(tokens::revoke_token))
        .routes(routes!(audit::list_audit))
        .routes(routes!(clusters::list_kinds))
        .routes(routes!(clusters::list_providers, clusters::create_provider))
        .routes(routes!(
            clusters::get_provider,
            clusters::update_provider,
            clusters::delete_provider
        ))
        .routes(routes!(clusters::adoptable_clusters))
        .routes(routes!(clusters::list_templates, clusters::create_template))
        .routes(routes!(
            clusters::get_template,
            clusters::update_template,
            clusters::delete_template
        ))
        .routes(routes!(clusters::list_clusters, clusters::create_cluster))
        .routes(routes!(clusters::adopt_cluster))
        .routes(routes!(clusters::get_cluster, clusters::delete_cluster))
        .routes(routes!(clusters::cluster_events))
        .routes(routes!(clusters::scale_cluster))
        .routes(routes!(clusters::upgrade_cluster))
        .routes(routes!(clusters::replace_node))
        .routes(routes!(
            autoscaling::get_autoscaling,
            autoscaling::put_autoscaling,
            autoscaling::delete_autoscaling
        ))
        .routes(routes!(clusters::kubeconfig))
        .routes(routes!(clusters::credential))
        .routes(routes!(clusters::revoke_access))
        .routes(routes!(clusters::join_info))
        .routes(routes!(clusters::revoke_join_token))
        .routes(routes!(quotas::get_quota, quotas::put_quota))
        .routes(routes!(apps::list_apps, apps::deploy_app))
        .routes(routes!(apps::preview_app))
        .routes(routes!(apps::app_status, apps::delete_app))
        .routes(routes!(backups::list_backups, backups::take_backup))
        .routes(routes!(backups::get_backup))
        .routes(routes!(backups::backup_archive))
        .routes(routes!(backups::restore_plan))
        .routes(routes!(backups::restore_backup))
        .routes(routes!(backups::get_restore))
        .routes(routes!(backup_ids::list_all_backups))
        .routes(routes!(
            backup_ids::get_backup_by_id,
            backup_ids::delete_backup
        ))
        .routes(routes!(backup_ids::backup_archive_by_id))
        .routes(routes!(backup_ids::restore_plan_by_id))
        .routes(routes!(backup_ids::restore_backup_by_id))
        .routes(routes!(
            backups::get_schedule,
            backups::put_schedule,
            backups::delete_schedule
        ))
        .routes(routes!(approvals::put_production))
        .routes(routes!(
            approvals::cluster_approvals,
            approvals::request_approval
        ))
        .routes(routes!(approvals::list_approvals))
        .routes(routes!(approvals::get_approval))
        .routes(routes!(approvals::approve))
        .routes(routes!(approvals::refuse))
        .routes(routes!(rollouts::list_rollouts, rollouts::start_rollout))
        .routes(routes!(rollouts::plan_rollout))
        .routes(routes!(rollouts::get_rollout))
        .routes(routes!(rollouts::pause_rollout))
        .routes(routes!(rollouts::resume_rollout))
        .routes(routes!(rollouts::abort_rollout))
        .routes(routes!(addons::list_addons, addons::define_addon))
        .routes(routes!(addons::get_addon, addons::delete_addon))
        .routes(routes!(addons::cluster_addons))
        .routes(routes!(addons::install_addon, addons::remove_addon))
        .routes(routes!(addons::fleet_addons))
        .routes(routes!(addons::bulk_upgrade))
        .routes(routes!(fleet::cluster_inventory))
        .routes(routes!(fleet::sync_cluster))
        .routes(routes!(fleet::overview))
        .routes(routes!(fleet::images))
        .routes(routes!(fleet::image_history))
        .routes(routes!(fleet::versions))
        .routes(routes!(fleet::findings))
        .split_for_parts();
    // Authentication first, before any body is read: nobody learns more than "401".
    let router = router.route_layer(axum::middleware::from_fn(require_identity));
    // How one logs in from a terminal: open to all.
    let (open, open_doc) = OpenApiRouter::<AppState>::new()
        .routes(routes!(device_login::start))
        .routes(routes!(device_login::poll))
        .split_for_parts();
    let router = router.merge(open);
    let mut doc = doc;
    doc.merge(open_doc);
    let doc = std::sync::Arc::new(openapi::finish(&doc));
    // The provider bodies depend on the provisioners of this installation (its state).
    let finished = std::sync::Arc::new(std::sync::OnceLock::new());
    router.route(
        "/api/v1/openapi.json",
        get(
            move |axum::extract::State(state): axum::extract::State<AppState>| async move {
                let full = finished
                    .get_or_init(|| openapi::with_provider_kinds(&doc, state.kqueen.registry()));
                Json(serde_json::Value::clone(full))
            },
        ),
    )
}

/// Layers outside the API's router (the body limit of the whole app) answer in plain text:
/// under `/api/` their refusals take the API's error shape too, as the document says.
pub async fn api_error_shape(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let res = next.run(req).await;
    let json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
    if api && res.status() == StatusCode::PAYLOAD_TOO_LARGE && !json {
        return error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is larger than the 2 MiB the API accepts",
        );
    }
    res
}

/// Refuses API requests without a logged-in user (session or token) with 401.
async fn require_identity(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let known = req
        .extensions()
        .get::<kqueen_core::Actor>()
        .is_some_and(|a| a.identity().is_some());
    if known {
        next.run(req).await
    } else {
        error_response(StatusCode::UNAUTHORIZED, "authentication required")
    }
}

/// A domain error as an HTTP answer: `{"error": message, "status": code}`. Internal causes
/// are logged and answered with an opaque message.
pub struct ApiError(pub kqueen_core::Error);

impl From<kqueen_core::Error> for ApiError {
    fn from(e: kqueen_core::Error) -> Self {
        Self(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let public = self.0.public();
        let status = if names_a_missing_resource(&self.0) {
            StatusCode::NOT_FOUND
        } else {
            crate::error::status_of(public.kind)
        };
        error_response(status, &public.message)
    }
}

/// A body that names a template, provider or tenant that does not exist (`{"template":
/// "nope"}`) is well formed: like a path naming nothing, it answers 404, saying which.
fn names_a_missing_resource(e: &kqueen_core::Error) -> bool {
    match e {
        kqueen_core::Error::Invalid(v) => {
            matches!(
                (v.field, v.message.as_str()),
                ("template", "no such template") | ("provider", "no such provider")
            ) || (v.field == "tenants" && v.message.starts_with("no tenant '"))
        }
        _ => false,
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

pub use crate::error::error_response;

pub use crate::escape::query_escape;
