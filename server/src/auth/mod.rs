//! Who is asking: every request gets an [`Actor`] in its extensions, from a bearer token
//! (API and CLI) or from the session cookie (portal), with the peer address as source IP.
//! Pages and server functions read it from there; nothing else decides identity.

pub mod device_flow;
pub mod oidc;
pub mod routes;
pub mod session_store;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use kqueen_core::{Actor, Kqueen};
use tower_sessions::Session;
use uuid::Uuid;

/// Session keys.
pub const USER_ID: &str = "kq.user_id";
pub const LOGIN_AT: &str = "kq.login_at";

/// Resolves the request's [`Actor`] and stores it in the request extensions.
pub async fn resolve_actor(
    State(state): State<AuthState>,
    session: Session,
    mut req: Request,
    next: Next,
) -> Response {
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_string());
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned);
    let actor = match bearer {
        Some(token) => match state.kqueen.tokens().authenticate_token(&token).await {
            Ok(Some(identity)) => Actor::user(identity),
            Ok(None) => return unauthorized("invalid, expired or revoked token"),
            Err(e) => return internal(e),
        },
        None => match session_identity(&state, &session).await {
            Ok(actor) => actor,
            Err(e) => return internal(e),
        },
    };
    if actor.identity().is_none()
        && req.method() == axum::http::Method::GET
        && is_page(req.uri().path())
    {
        let here = req.uri().path_and_query().map_or("/", |p| p.as_str());
        let to = format!("/login?next={}", crate::escape::query_escape(here));
        return axum::response::Redirect::to(&to).into_response();
    }
    req.extensions_mut().insert(actor.with_source_ip(ip));
    next.run(req).await
}

/// Portal pages (which need a login), as opposed to the login page, an invitation's
/// set-password page (the link is the proof), authentication routes, the API, server
/// functions, health checks and static files.
fn is_page(path: &str) -> bool {
    const EXACT: [&str; 4] = ["/login", "/healthz", "/readyz", "/metrics"];
    const PREFIX: [&str; 5] = ["/auth/", "/api/", "/sfn/", "/pkg/", "/invite/"];
    let last = path.rsplit('/').next().unwrap_or_default();
    !EXACT.contains(&path) && !PREFIX.iter().any(|p| path.starts_with(p)) && !last.contains('.')
}

#[cfg(test)]
mod tests {
    #[test]
    fn sessions_end_at_the_absolute_expiry_whatever_the_activity() {
        let login = 1_000_000;
        assert!(!super::past_absolute_expiry(login, login + 24 * 3600, 24));
        assert!(super::past_absolute_expiry(
            login,
            login + 24 * 3600 + 1,
            24
        ));
        assert!(
            super::past_absolute_expiry(0, login, 24),
            "no login time: expired"
        );
    }

    #[test]
    fn pages_and_open_paths() {
        for page in [
            "/",
            "/audit",
            "/tenants/team-a",
            "/no/such/page",
            "/login-help",
        ] {
            assert!(super::is_page(page), "{page}");
        }
        for open in [
            "/login",
            "/invite/kqi_secret",
            "/auth/callback",
            "/api/v1/whoami",
            "/sfn/me",
            "/pkg/kqueen.js",
            "/healthz",
            "/favicon.svg",
        ] {
            assert!(!super::is_page(open), "{open}");
        }
    }
}

async fn session_identity(
    state: &AuthState,
    session: &Session,
) -> Result<Actor, kqueen_core::Error> {
    let user_id: Option<Uuid> = session.get(USER_ID).await.ok().flatten();
    let Some(user_id) = user_id else {
        return Ok(Actor::anonymous());
    };
    let login_at: i64 = session.get(LOGIN_AT).await.ok().flatten().unwrap_or(0);
    if past_absolute_expiry(
        login_at,
        Utc::now().timestamp(),
        state.config.session_absolute_hours,
    ) {
        // Absolute expiry: log in again, whatever the activity.
        let _ = session.flush().await;
        return Ok(Actor::anonymous());
    }
    match state.kqueen.auth().identity(user_id).await? {
        Some(identity) => Ok(Actor::user(identity)),
        None => {
            // Disabled or deleted meanwhile.
            let _ = session.flush().await;
            Ok(Actor::anonymous())
        }
    }
}

/// True when a session that logged in at `login_at` (unix seconds) is older than `hours`.
fn past_absolute_expiry(login_at: i64, now: i64, hours: u32) -> bool {
    now.saturating_sub(login_at) > i64::from(hours) * 3600
}

/// Marks `session` as logged in for `user_id`, with a new session id (no fixation).
pub async fn start_session(
    session: &Session,
    user_id: Uuid,
) -> Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.insert(USER_ID, user_id).await?;
    session.insert(LOGIN_AT, Utc::now().timestamp()).await
}

fn unauthorized(message: &str) -> Response {
    let mut res = crate::error::error_response(StatusCode::UNAUTHORIZED, message);
    res.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    res
}

fn internal(e: kqueen_core::Error) -> Response {
    tracing::error!(error = ?e, "cannot resolve the request's identity");
    crate::error::error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
}

/// What the login routes and the identity middleware need: the domain, the settings and the
/// identity provider. One reference count to clone per request.
#[derive(Clone)]
pub struct AuthState(std::sync::Arc<AuthShared>);

impl AuthState {
    pub fn new(
        kqueen: Kqueen,
        config: AuthConfig,
        oidc: Option<std::sync::Arc<oidc::Oidc>>,
    ) -> Self {
        Self(std::sync::Arc::new(AuthShared {
            kqueen,
            config,
            oidc,
        }))
    }
}

impl std::ops::Deref for AuthState {
    type Target = AuthShared;
    fn deref(&self) -> &AuthShared {
        &self.0
    }
}

/// What [`AuthState`] shares.
pub struct AuthShared {
    pub kqueen: Kqueen,
    pub config: AuthConfig,
    /// None: single sign-on is not configured.
    pub oidc: Option<std::sync::Arc<oidc::Oidc>>,
}

/// Authentication settings the handlers need.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub public_url: String,
    pub local_accounts: bool,
    pub session_idle_minutes: u32,
    pub session_absolute_hours: u32,
    /// Whether `public_url` was configured (else origins are checked against the Host header).
    pub public_url_configured: bool,
}
