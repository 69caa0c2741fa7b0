//! Cross-site request forgery defence in addition to `SameSite=Lax` cookies: a state-changing
//! request that relies on the session cookie must name the portal's own origin in `Origin`
//! (or, when a browser omits it, `Referer`). Bearer-token requests carry no ambient
//! credentials and are not checked.

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

pub async fn same_origin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        || req.headers().get(header::AUTHORIZATION).is_some()
        // An API call with no cookie carries no credential to forge: it answers 401.
        || (req.uri().path().starts_with("/api/") && req.headers().get(header::COOKIE).is_none())
    {
        return next.run(req).await;
    }
    let expected = if state.auth.config.public_url_configured {
        state.auth.config.public_url.clone()
    } else {
        // No public URL configured: the origin the browser used to reach us.
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        format!("http://{host}")
    };
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            let referer = req.headers().get(header::REFERER)?.to_str().ok()?;
            let url = url::Url::parse(referer).ok()?;
            Some(url.origin().ascii_serialization())
        });
    if origin.as_deref() == Some(expected.as_str()) {
        return next.run(req).await;
    }
    tracing::warn!(origin = ?origin, path = %req.uri().path(), "cross-origin request refused");
    crate::error::error_response(StatusCode::FORBIDDEN, "cross-origin request refused")
}
