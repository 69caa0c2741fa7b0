//! Request extractors of the API. axum's own answer a malformed request with plain text; these
//! answer the API's error shape, `{"error": "...", "status": N}`, with the same status and
//! message, so clients parse every error the same way.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::Response;

use super::error_response;

/// A JSON request body ([`axum::Json`]): 415 without a JSON content type, 400 for a body that
/// is not JSON, 422 for JSON of the wrong shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    axum::Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(error_response(rejection.status(), &rejection.body_text())),
        }
    }
}

/// Query-string parameters ([`axum::extract::Query`]): 400 when they do not parse.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    axum::extract::Query<T>: FromRequestParts<S, Rejection = QueryRejection>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(error_response(rejection.status(), &rejection.body_text())),
        }
    }
}
