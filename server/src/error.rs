//! How errors leave the server: the status of each kind of domain error, and the JSON body
//! every error answer of the API and of the middlewares in front of it has.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use kqueen_core::ErrorKind;
use serde_json::json;

/// The HTTP status of a kind of domain error.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::Invalid => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The API's error body, `{"error": message, "status": code}`, with that status.
pub fn error_response(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": message, "status": status.as_u16() })),
    )
        .into_response()
}
