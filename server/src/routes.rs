//! The whole HTTP surface in one place: which routes exist and the layers in front of them.

use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;
use kqueen_app::account::dto::LoginOptions;
use kqueen_app::{shell, App};
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::auth::session_store::DbSessionStore;
use crate::state::AppState;
use crate::{api, auth, csrf, download, health, metrics, page_slots};

/// The whole HTTP surface: health endpoints, metrics, login and logout, the REST API, portal
/// pages, server functions, static files. Every request passes (outermost first): tracing,
/// timing (`/metrics`), session, identity resolution, same-origin check; page loads then
/// wait for a page slot.
/// The largest request body any route accepts (axum's default for its extractors).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

pub fn router(state: AppState) -> Router {
    let kqueen = state.kqueen.clone();
    let public_url = kqueen_app::users::PublicUrl(state.auth.config.public_url.clone());
    let login_options = LoginOptions {
        sso: state.auth.oidc.is_some(),
        local_accounts: state.auth.config.local_accounts,
    };
    let sessions = SessionManagerLayer::new(DbSessionStore::new(state.kqueen.store().clone()))
        .with_name("kqueen_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(state.auth.config.public_url.starts_with("https://"))
        .with_expiry(Expiry::OnInactivity(time::Duration::minutes(i64::from(
            state.auth.config.session_idle_minutes,
        ))));
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::metrics))
        .route("/auth/login", get(auth::routes::login))
        .route("/auth/callback", get(auth::routes::callback))
        .route("/auth/local", post(auth::routes::local))
        .route("/auth/logout", post(auth::routes::logout))
        .merge(api::router())
        .route("/clusters/{id}/kubeconfig", get(download::kubeconfig))
        .route(
            "/clusters/{id}/backups/{backup}/archive",
            get(download::backup_archive),
        )
        .route(
            "/backups/{backup}/archive",
            get(download::backup_archive_by_id),
        )
        .merge(pages(&state, kqueen, login_options, public_url))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        // Server functions read their whole body themselves: bound it like axum's extractors
        // bound the API's.
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(axum::middleware::from_fn(api::api_error_shape))
        .layer(from_fn_with_state(state.clone(), csrf::same_origin))
        .layer(from_fn_with_state(state.clone(), auth::resolve_actor))
        .layer(sessions)
        .layer(from_fn_with_state(
            state.http_metrics.clone(),
            metrics::http::track,
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// The portal's pages and server functions; a page load renders once it holds one of the
/// process's page slots ([`crate::page_slots`]).
fn pages(
    state: &AppState,
    kqueen: kqueen_core::Kqueen,
    login_options: LoginOptions,
    public_url: kqueen_app::users::PublicUrl,
) -> Router<AppState> {
    let options = state.leptos_options.clone();
    Router::new()
        .leptos_routes_with_context(
            state,
            generate_route_list(App),
            move || {
                provide_context(kqueen.clone());
                provide_context(login_options);
                provide_context(public_url.clone());
                provide_context(kqueen_app::kept::RequestKept::default());
            },
            move || shell(options.clone()),
        )
        .route_layer(from_fn_with_state(
            state.page_slots.clone(),
            page_slots::admit,
        ))
}
