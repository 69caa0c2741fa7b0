//! The API's contract as documented: malformed requests answer the error shape,
//! `{"error": "...", "status": N}`, never plain text.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::TestApp;

#[tokio::test]
async fn malformed_requests_answer_the_api_error_shape() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let amy = app.user("amy", true, &[("team-a", "admin")]).await;
    let cases: [(Method, &str, Option<&str>, &str, StatusCode); 7] = [
        (
            Method::POST,
            "/api/v1/clusters",
            Some("application/json"),
            "{\"name\": ",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            "/api/v1/clusters",
            Some("application/json"),
            "{\"name\": 1}",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            "/api/v1/clusters",
            Some("text/plain"),
            "{}",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            Method::POST,
            "/api/v1/clusters",
            None,
            "",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            Method::POST,
            "/api/v1/tokens",
            Some("application/json"),
            "[]",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::PUT,
            "/api/v1/tenants/team-a/quota",
            Some("application/json"),
            "{\"max_clusters\": -1}",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::GET,
            "/api/v1/clusters?limit=many",
            None,
            "",
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (method, path, content_type, body, want) in cases {
        let mut req = amy.request(method.clone(), format!("{}{path}", app.url));
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let res = req.body(body).send().await.unwrap();
        let status = res.status();
        let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
        let text = res.text().await.unwrap();
        assert_eq!(status, want, "{method} {path} {body}: {text}");
        assert_eq!(ct, "application/json", "{method} {path} {body}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["status"], want.as_u16(), "{answer}");
        assert!(!answer["error"].as_str().unwrap().is_empty(), "{answer}");
    }
    app.stop().await;
}
