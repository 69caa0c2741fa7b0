//! Health endpoints, pages, server functions and static files, on SQLite and on Postgres.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::TestApp;

async fn health_and_readiness(app: &TestApp) {
    let res = app.get("/healthz").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "ok");
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "ready");
}

async fn pages_need_a_login(app: &TestApp) {
    for path in ["/", "/audit", "/tokens", "/admin", "/tenants/team-a"] {
        let res = app.get(path).await;
        assert!(res.status().is_redirection(), "{path}: {}", res.status());
        let to = res.headers()["location"].to_str().unwrap();
        assert!(to.starts_with("/login?next="), "{path} -> {to}");
    }
    let login = app.get("/login").await;
    assert_eq!(login.status(), StatusCode::OK);
    let html = login.text().await.unwrap();
    assert!(
        html.contains(r#"action="/auth/local""#),
        "local login form: {html}"
    );
    assert!(!html.contains("sso-login"), "no single sign-on configured");
}

async fn overview_lists_tenants_from_the_database(app: &TestApp) {
    let op = app.user("root", true, &[]).await;
    let empty = app.get_as(&op, "/").await.text().await.unwrap();
    assert!(empty.contains("tenant-empty"), "{empty}");

    app.seed_tenant("team-a", "Team Alpha").await;
    app.seed_tenant("team-b", "Team Beta").await;
    let res = app.get_as(&op, "/").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = res.text().await.unwrap();
    for needle in [
        "<title>Overview · KQueen</title>",
        r#"data-tenant="team-a""#,
        r#"data-tenant="team-b""#,
        "Team Alpha",
        r#"href="/pkg/kqueen.css""#,
        "/pkg/kqueen.js",
        "kqueen_bg.wasm",
        r#"data-hydrated="false""#,
    ] {
        assert!(html.contains(needle), "missing {needle} in {html}");
    }

    let filtered = app.get_as(&op, "/?q=ALPHA").await.text().await.unwrap();
    assert!(
        filtered.contains(r#"data-tenant="team-a""#)
            && !filtered.contains(r#"data-tenant="team-b""#)
    );
    let none = app.get_as(&op, "/?q=nothing").await.text().await.unwrap();
    assert!(none.contains("No tenant matches this filter"), "{none}");

    // A member sees only their own tenant.
    let member = app.user("alice", false, &[("team-b", "member")]).await;
    let html = app.get_as(&member, "/").await.text().await.unwrap();
    assert!(html.contains(r#"data-tenant="team-b""#) && !html.contains(r#"data-tenant="team-a""#));
}

async fn server_functions_answer_json(app: &TestApp) {
    app.seed_tenant("team-a", "Team Alpha").await;
    app.seed_tenant("ops", "Operations").await;
    let op = app.user("root", true, &[]).await;
    let res = op
        .post(format!("{}/sfn/tenants", app.url))
        .form(&[("q", "alpha")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let slugs: Vec<_> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slug"].clone())
        .collect();
    assert_eq!(slugs, ["team-a"]);

    let res = op
        .post(format!("{}/sfn/overview", app.url))
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["tenants"], 2);
    assert_eq!(body["audit_events"], 4, "2 tenants, 1 user, 1 login");

    let anonymous = app
        .browser()
        .post(format!("{}/sfn/overview", app.url))
        .send()
        .await
        .unwrap();
    assert!(!anonymous.status().is_success());
    assert_eq!(
        anonymous.json::<Value>().await.unwrap(),
        serde_json::json!("Unauthenticated")
    );
}

async fn audit_page_shows_and_filters_events(app: &TestApp) {
    app.seed_tenant("team-a", "Team Alpha").await;
    let op = app.user("root", true, &[]).await;
    let html = app
        .get_as(&op, "/audit?action=tenant.create")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("tenant.create") && html.contains("badge-success"),
        "{html}"
    );
    let html = app
        .get_as(&op, "/audit?action=user.nothing")
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("No audit events."), "{html}");
    let html = app
        .get_as(&op, "/audit?actor=root&action=auth.")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("auth.login") && !html.contains("tenant.create"),
        "{html}"
    );
    let html = app
        .get_as(&op, "/audit?since=not-a-date")
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("must be a date"), "{html}");
    let member = app.user("alice", false, &[("team-a", "member")]).await;
    let html = app.get_as(&member, "/audit").await.text().await.unwrap();
    assert!(html.contains("permission denied"), "{html}");
}

async fn static_files_and_not_found(app: &TestApp) {
    let res = app.get("/pkg/kqueen.css").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let op = app.user("root", true, &[]).await;
    let res = app.get_as(&op, "/no/such/page").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(res.text().await.unwrap().contains("Page not found"));
}

async fn readiness_fails_when_the_database_is_gone(app: &TestApp) {
    app.on_server(|s| async move { s.kqueen.shutdown().await })
        .await;
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "unavailable");
    assert_eq!(
        app.get("/healthz").await.status(),
        StatusCode::OK,
        "still alive"
    );
}

async fn concurrent_requests_all_complete(app: &TestApp) {
    app.seed_tenant("team-a", "Team Alpha").await;
    let op = app.user("root", true, &[]).await;
    let op = &op;
    let requests = (0..48).map(|i| {
        let path = match i % 4 {
            0 => "/".to_owned(),
            1 => format!("/?q=team-{i}"),
            2 => "/audit".to_owned(),
            _ => "/readyz".to_owned(),
        };
        async move { app.get_as(op, &path).await.status() }
    });
    let all = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        futures_util::future::join_all(requests),
    )
    .await
    .expect("every concurrent request completes");
    assert!(all.iter().all(|s| *s == StatusCode::OK), "{all:?}");
}

/// A page hands its data to the browser in its hydration script as base64 of the JSON, which a
/// JavaScript string literal carries without escaping a character (see `app/src/hydrated.rs`:
/// escaping the JSON's quotes was a tenth of a page's CPU).
async fn pages_hand_their_data_over_as_base64(app: &TestApp) {
    app.seed_tenant("team-a", "Team \"Alpha\" <a&b>").await;
    let op = app.user("root", true, &[("team-a", "admin")]).await;
    for path in [
        "/",
        "/clusters",
        "/fleet",
        "/tokens",
        "/audit",
        "/tenants/team-a",
    ] {
        let html = app.get_as(&op, path).await.text().await.unwrap();
        // Each literal decodes (page_data panics otherwise): the shell's resource (who is
        // signed in) and the page's own.
        let data = crate::helpers::page_data(&html);
        assert!(data.len() >= 2, "{path}: {data:?} in {html}");
        for json in &data {
            serde_json::from_str::<Value>(json)
                .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {json}"));
        }
        assert!(data[0].contains(r#""username":"root""#), "{path}: {data:?}");
    }
}

/// The tenant filter of the list pages, and the tenant of the request form, offer the tenants
/// to choose from, and a field to type one in once there are too many for a list (its options
/// would weigh on every page, and past 500 some could not be chosen at all).
async fn tenant_filters_offer_choices_until_there_are_too_many(app: &TestApp) {
    let op = app.user("root", true, &[]).await;
    let pages = [
        "/clusters",
        "/fleet",
        "/fleet/images",
        "/fleet/versions",
        "/fleet/findings",
    ];
    for i in 0..3 {
        app.seed_tenant(&format!("t-{i:02}"), "T").await;
    }
    let filtered = |page: &'static str, tenant: &'static str| {
        let op = &op;
        async move {
            app.get_as(op, &format!("{page}?tenant={tenant}"))
                .await
                .text()
                .await
                .unwrap()
        }
    };
    for page in pages {
        let html = filtered(page, "t-01").await;
        assert!(
            html.contains(r#"<select id="f-tenant" name="tenant">"#),
            "{page}: {html}"
        );
        assert!(html.contains(r#"<option value="t-02">"#), "{page}");
        assert!(html.contains(r#"<option value="t-01" selected>"#), "{page}");
    }
    let request = |query: &'static str| {
        let op = &op;
        async move {
            let res = app.get_as(op, &format!("/clusters/new{query}")).await;
            assert_eq!(res.status(), StatusCode::OK, "{query}");
            // Without the markers hydration places between a text's parts.
            res.text().await.unwrap().replace("<!>", "")
        }
    };
    let html = request("?tenant=t-01").await;
    assert!(
        html.contains(r#"<select id="r-tenant" name="tenant" required"#),
        "{html}"
    );
    assert!(html.contains(r#"<option value="t-01" selected>"#), "{html}");
    for i in 3..51 {
        app.seed_tenant(&format!("t-{i:02}"), "T").await;
    }
    for page in pages {
        let html = filtered(page, "t-07").await;
        assert!(!html.contains(r#"<select id="f-tenant""#), "{page}: {html}");
        assert!(!html.contains(r#"<option value="t-02">"#), "{page}");
        assert!(
            html.contains(r#"<input id="f-tenant" name="tenant" value="t-07""#),
            "{page}: {html}"
        );
    }
    // The request form: the slug is typed, checked by the browser against the slug's rules,
    // then by the server against the tenants the caller sees (said at the field).
    let html = request("").await;
    assert!(
        html.contains(r#"<input id="r-tenant" name="tenant" required"#),
        "{html}"
    );
    assert!(
        html.contains(r#"pattern="[a-z0-9]([a-z0-9\-]*[a-z0-9])?""#),
        "{html}"
    );
    let html = request("?tenant=+t-07+").await;
    assert!(
        html.contains(r#"name="tenant" required value="t-07""#),
        "{html}"
    );
    assert!(html.contains("Quota of t-07"), "{html}");
    assert!(!html.contains("r-tenant-error"), "{html}");
    let html = request("?tenant=nope").await;
    assert!(
        html.contains(r#"<p id="r-tenant-error" role="alert" class="field-error">"#),
        "{html}"
    );
    assert!(html.contains("You have no tenant named “nope”."), "{html}");
    assert!(html.contains(r#"aria-invalid="true""#), "{html}");
    assert!(!html.contains("Quota of"), "{html}");
    // A member of one tenant still chooses among their own, and cannot name another.
    let member = app.user("alice", false, &[("t-03", "member")]).await;
    let html = app.get_as(&member, "/clusters").await.text().await.unwrap();
    assert!(html.contains(r#"<option value="t-03">"#), "{html}");
    let page = |path: &'static str| {
        let member = &member;
        async move {
            let html = app.get_as(member, path).await.text().await.unwrap();
            html.replace("<!>", "")
        }
    };
    let html = page("/clusters/new").await;
    assert!(html.contains(r#"<option value="t-03" selected>"#), "{html}");
    assert!(html.contains("Quota of t-03"), "{html}");
    let html = page("/clusters/new?tenant=t-04").await;
    assert!(html.contains("You have no tenant named “t-04”."), "{html}");
    assert!(!html.contains("Quota of t-04"), "{html}");
}

macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() {
                let app = super::TestApp::sqlite().await;
                super::$name(&app).await;
                app.stop().await;
            })*
        }
        mod postgres {
            $(#[tokio::test] async fn $name() {
                let Some(app) = super::TestApp::postgres().await else { return };
                super::$name(&app).await;
                app.stop().await;
            })*
        }
    };
}

on_both_databases!(
    health_and_readiness,
    pages_need_a_login,
    overview_lists_tenants_from_the_database,
    server_functions_answer_json,
    audit_page_shows_and_filters_events,
    static_files_and_not_found,
    readiness_fails_when_the_database_is_gone,
    concurrent_requests_all_complete,
    pages_hand_their_data_over_as_base64,
    tenant_filters_offer_choices_until_there_are_too_many,
);
