//! The portal's server functions as a script or a stale tab calls them: a request whose
//! arguments cannot be read (a field missing) is the client's mistake, answered 400 with a
//! plain message, and writes nothing; no server function answers 500 to it.

use kqueen_core::audit::AuditQuery;
use reqwest::StatusCode;

use crate::helpers::TestApp;

/// The writes a missing field used to turn into a 500 `Transport` error.
const WRITES: [&str; 12] = [
    "save_template",
    "define_addon",
    "create_token",
    "revoke_token",
    "put_member",
    "set_quota",
    "create_user",
    "create_tenant",
    "install_addon",
    "sync_inventory",
    "preview_app",
    "save_provider",
];

#[tokio::test]
async fn a_malformed_call_answers_400_with_a_plain_message_and_writes_nothing() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[("team-a", "admin")]).await;
    let written = app.audit(AuditQuery::default()).await.len();
    let mut refused = Vec::new();
    let mut paths: Vec<&str> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(_, method)| method == reqwest::Method::POST)
        .map(|(path, _)| path)
        .collect();
    paths.sort_unstable();
    for path in &paths {
        let res = olga
            .post(format!("{}{path}", app.url))
            .form(&[("unexpected", "x")])
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body = res.text().await.unwrap();
        assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "{path}: {body}");
        if status == StatusCode::BAD_REQUEST {
            assert!(
                body.contains("Invalid") && body.contains("malformed request: missing field "),
                "{path}: {body}"
            );
            assert!(!body.contains('`'), "{path}: {body}");
            refused.push(path.trim_start_matches("/sfn/").to_owned());
        }
    }
    for write in WRITES {
        assert!(
            refused.iter().any(|r| r == write),
            "{write} in {refused:?} (of {paths:?})"
        );
    }
    assert_eq!(
        app.audit(AuditQuery::default()).await.len(),
        written,
        "nothing was written"
    );
    // A form posted without JavaScript is sent back to its page, as every failed write is.
    let res = olga
        .post(format!("{}/sfn/create_token", app.url))
        .header(reqwest::header::ACCEPT, "text/html")
        .header(reqwest::header::REFERER, format!("{}/tokens", app.url))
        .form(&[("unexpected", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND);
}
