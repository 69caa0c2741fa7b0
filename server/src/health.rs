//! Liveness and readiness for load balancers and orchestrators.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use kqueen_core::Kqueen;
use serde_json::{json, Value};

/// `GET /healthz`: the process is up and serving requests.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: the database answers; 503 otherwise.
pub async fn readyz(State(kqueen): State<Kqueen>) -> (StatusCode, Json<Value>) {
    match kqueen.ready().await {
        Ok(()) => (StatusCode::OK, Json(json!({ "status": "ready" }))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "reason": "database unreachable" })),
            )
        }
    }
}
