//! `kqueen login` without a token at hand: the identity provider's device flow (RFC 8628)
//! through the portal, ending in a personal API token. The only API routes open without a
//! login: they are how one logs in.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::Actor;

use super::{error_response, ApiJson, DeviceLoggedIn, DeviceLoginOut, DevicePendingOut};
use super::{DeviceTokenIn, ErrorOut, TokenOut};
use crate::auth::device_flow::{DeviceError, DevicePoll};
use crate::auth::oidc::OidcError;
use crate::state::AppState;

/// Name of the token a device login issues when the client names none.
const DEFAULT_NAME: &str = "kqueen CLI";
/// Its validity when the client says nothing.
const DEFAULT_DAYS: u32 = 30;
/// The longest validity of a device login's token (a code confirmed on someone's behalf
/// should not give a year).
const MAX_DAYS: u32 = 90;
/// Seconds a poll is told to wait more after the provider said "slow down" (RFC 8628 3.5).
const SLOW_DOWN_STEP: u64 = 5;
/// Seconds between polls when the client did not keep the start's interval.
const POLL_INTERVAL: u64 = 5;

/// Starts a device login at the identity provider: the answer says where the user signs in
/// and which code they enter there.
#[utoipa::path(post, path = "/api/v1/login/device", tag = "identity", security(()),
    responses((status = 200, body = DeviceLoginOut),
        (status = 404, body = ErrorOut, description = "Single sign-on is not configured, or the identity provider offers no device login"),
        (status = 502, body = ErrorOut, description = "The identity provider failed")))]
pub async fn start(State(state): State<AppState>) -> Response {
    let Some(oidc) = state.auth.oidc.clone() else {
        return no_sso();
    };
    match oidc.device_start().await {
        Ok(s) => no_store(Json(DeviceLoginOut {
            user_code: s.user_code,
            verification_uri: s.verification_uri,
            verification_uri_complete: s.verification_uri_complete,
            expires_in: s.expires_in,
            interval: s.interval,
            device_code: s.device_code,
        })),
        Err(e) => refusal(&e),
    }
}

/// Polls a device login: 202 while the user has not finished at the identity provider, 200
/// with a new personal API token once they have.
#[utoipa::path(post, path = "/api/v1/login/device/token", tag = "identity", security(()),
    request_body = DeviceTokenIn,
    responses((status = 200, body = DeviceLoggedIn),
        (status = 202, body = DevicePendingOut),
        (status = 400, body = ErrorOut, description = "Invalid input; an unknown, used or expired device code"),
        (status = 401, body = ErrorOut, description = "The account is disabled"),
        (status = 403, body = ErrorOut, description = "The user refused the login at the identity provider"),
        (status = 404, body = ErrorOut, description = "Single sign-on is not configured, or the identity provider offers no device login"),
        (status = 502, body = ErrorOut, description = "The identity provider failed, or its ID token was not valid")))]
pub async fn poll(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<DeviceTokenIn>,
) -> Response {
    let code = input.device_code.as_str();
    if code.is_empty() || code.len() > 1024 || !code.bytes().all(|b| b.is_ascii_graphic()) {
        return error_response(
            StatusCode::BAD_REQUEST,
            "device_code: must be the code from POST /api/v1/login/device",
        );
    }
    let Some(oidc) = state.auth.oidc.clone() else {
        return no_sso();
    };
    let name = input.name.as_deref().unwrap_or(DEFAULT_NAME);
    let days = input.days.unwrap_or(DEFAULT_DAYS);
    // Before the provider is asked: a finished sign-in is spent by the poll that sees it.
    if let Err(e) = state.kqueen.tokens().check_input(name, days) {
        return super::ApiError(e).into_response();
    }
    if days > MAX_DAYS {
        return error_response(
            StatusCode::BAD_REQUEST,
            "days: a device login's token lasts 1 to 90 days",
        );
    }
    let login = match oidc.device_poll(code).await {
        Ok(DevicePoll::Done(login)) => login,
        Ok(DevicePoll::Pending) => return pending("pending", POLL_INTERVAL),
        Ok(DevicePoll::SlowDown) => return pending("slow_down", POLL_INTERVAL + SLOW_DOWN_STEP),
        Err(e) => {
            // Every failed sign-in, but codes that never were or ran out.
            if !matches!(e, DeviceError::Expired | DeviceError::UnknownCode) {
                let auth = state.kqueen.auth();
                let _ = auth
                    .login_refused(&actor, "device login", &e.to_string())
                    .await;
            }
            return refusal(&e);
        }
    };
    let signed_in = state
        .kqueen
        .tokens()
        .sign_in_for_token(&login, name, days, actor.source_ip.clone())
        .await;
    match signed_in {
        Ok((identity, issued)) => {
            tracing::info!(user = %identity.username, "logged in (device login)");
            no_store(Json(DeviceLoggedIn {
                username: identity.username,
                token: TokenOut::from(issued.token),
                secret: issued.secret,
            }))
        }
        Err(e) => super::ApiError(e).into_response(),
    }
}

/// An answer holding a secret, which no cache may keep (RFC 6749 section 5.1).
fn no_store(body: impl IntoResponse) -> Response {
    let mut res = body.into_response();
    res.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    res
}

/// The answer when there is no identity provider.
fn no_sso() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "single sign-on is not configured on this portal; use a personal API token",
    )
}

fn pending(status: &str, interval: u64) -> Response {
    let body = DevicePendingOut {
        status: status.to_owned(),
        interval,
    };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

fn refusal(e: &DeviceError) -> Response {
    let status = match e {
        DeviceError::NotOffered => StatusCode::NOT_FOUND,
        DeviceError::Denied => StatusCode::FORBIDDEN,
        DeviceError::Expired | DeviceError::UnknownCode => StatusCode::BAD_REQUEST,
        DeviceError::Oidc(OidcError::Config(_)) => StatusCode::INTERNAL_SERVER_ERROR,
        DeviceError::Oidc(_) => StatusCode::BAD_GATEWAY,
    };
    if status.is_server_error() {
        tracing::warn!(error = %e, "device login failed");
    }
    error_response(status, &e.to_string())
}
