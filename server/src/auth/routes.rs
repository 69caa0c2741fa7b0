//! `/auth/*`: start and finish single sign-on, local login, logout. Every outcome is audited.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use kqueen_core::{Actor, Error};
use serde::Deserialize;
use tower_sessions::Session;

use super::oidc::{CallbackParams, PendingLogin};
use super::start_session;
use super::AuthState;

const PENDING: &str = "kq.oidc_pending";
const SSO: &str = "kq.sso";

/// A local path to return to after login; anything else (other hosts, `//x`) becomes `/`.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') && n.len() < 512 =>
        {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

#[derive(Debug, Deserialize)]
pub struct NextParam {
    next: Option<String>,
}

/// `GET /auth/login`: redirects to the identity provider.
pub async fn login(
    State(state): State<AuthState>,
    session: Session,
    Extension(actor): Extension<Actor>,
    Query(q): Query<NextParam>,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return Redirect::to("/login?error=sso-disabled").into_response();
    };
    match oidc.start(safe_next(q.next.as_deref())).await {
        Ok((url, pending)) => match session.insert(PENDING, &pending).await {
            Ok(()) => Redirect::to(url.as_str()).into_response(),
            Err(e) => fail(&state, &actor, &format!("session: {e}")).await,
        },
        Err(e) => fail(&state, &actor, &e.to_string()).await,
    }
}

/// `GET /auth/callback`: finishes single sign-on. The pending login is taken out of the
/// session first, so a replayed callback finds nothing.
pub async fn callback(
    State(state): State<AuthState>,
    session: Session,
    Extension(actor): Extension<Actor>,
    Query(params): Query<CallbackParams>,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return Redirect::to("/login?error=sso-disabled").into_response();
    };
    let pending: Option<PendingLogin> = session.remove(PENDING).await.ok().flatten();
    let Some(pending) = pending else {
        return fail(
            &state,
            &actor,
            &super::oidc::OidcError::NoPendingLogin.to_string(),
        )
        .await;
    };
    let login = match oidc.finish(&pending, &params).await {
        Ok(login) => login,
        Err(e) => return fail(&state, &actor, &e.to_string()).await,
    };
    match state
        .kqueen
        .auth()
        .login_external(&login, actor.source_ip.clone())
        .await
    {
        Ok(identity) => {
            if let Err(e) = start_session(&session, identity.user_id).await {
                return fail(&state, &actor, &format!("session: {e}")).await;
            }
            let _ = session.insert(SSO, true).await;
            tracing::info!(user = %identity.username, "logged in (single sign-on)");
            Redirect::to(&pending.next).into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "single sign-on refused");
            Redirect::to("/login?error=sso").into_response()
        }
    }
}

/// Audits a failed single sign-on and sends the user back to the login page.
async fn fail(state: &AuthState, actor: &Actor, reason: &str) -> Response {
    tracing::warn!(reason, "single sign-on failed");
    let _ = state
        .kqueen
        .auth()
        .login_refused(actor, "single sign-on", reason)
        .await;
    Redirect::to("/login?error=sso").into_response()
}

#[derive(Deserialize)]
pub struct LocalLogin {
    username: String,
    password: String,
    next: Option<String>,
}

impl std::fmt::Debug for LocalLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLogin")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// `POST /auth/local`: break-glass login with a local account's password.
pub async fn local(
    State(state): State<AuthState>,
    session: Session,
    Extension(actor): Extension<Actor>,
    Form(form): Form<LocalLogin>,
) -> Response {
    if !state.config.local_accounts {
        return Redirect::to("/login?error=local-disabled").into_response();
    }
    let next = safe_next(form.next.as_deref());
    let username: String = form.username.trim().chars().take(64).collect();
    match state
        .kqueen
        .auth()
        .login_local(&username, &form.password, actor.source_ip.clone())
        .await
    {
        Ok(identity) => match start_session(&session, identity.user_id).await {
            Ok(()) => {
                tracing::info!(user = %identity.username, "logged in (local account)");
                Redirect::to(&next).into_response()
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start a session");
                Redirect::to("/login?error=internal").into_response()
            }
        },
        Err(Error::Unauthenticated) => {
            let next = crate::escape::query_escape(&next);
            Redirect::to(&format!("/login?error=invalid&next={next}")).into_response()
        }
        Err(e) => {
            tracing::error!(error = ?e, "local login failed");
            Redirect::to("/login?error=internal").into_response()
        }
    }
}

/// `POST /auth/logout`: ends the session (and, after single sign-on, the provider's session).
pub async fn logout(
    State(state): State<AuthState>,
    session: Session,
    Extension(actor): Extension<Actor>,
) -> Response {
    let via_sso: bool = session.get(SSO).await.ok().flatten().unwrap_or(false);
    if actor.identity().is_some() {
        if let Err(e) = state.kqueen.auth().logout(&actor).await {
            tracing::error!(error = ?e, "cannot audit a logout");
        }
    }
    if let Err(e) = session.flush().await {
        tracing::error!(error = %e, "cannot destroy a session");
    }
    let after = format!("{}/login?logged_out=1", state.config.public_url);
    if via_sso {
        if let Some(oidc) = &state.oidc {
            if let Some(url) = oidc.logout_url(&after).await {
                return Redirect::to(url.as_str()).into_response();
            }
        }
    }
    Redirect::to("/login?logged_out=1").into_response()
}
