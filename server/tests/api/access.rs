//! Every /api/v1 route, server function and form route, tried as the wrong tenant, the wrong
//! role and nobody: all refused (401/403/404) and audited. Also API tokens, CSRF, session
//! expiry and the OpenAPI document.

use kqueen_core::audit::{AuditQuery, Outcome};
use reqwest::header::{HeaderValue, AUTHORIZATION, ORIGIN};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::TestApp;

async fn call(
    client: &reqwest::Client,
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = client.request(method, format!("{}{path}", app.url));
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap()
}

async fn denied_count(app: &TestApp, actor: &str) -> usize {
    let events = app
        .audit(AuditQuery {
            actor: Some(actor.to_owned()),
            ..Default::default()
        })
        .await;
    events
        .iter()
        .filter(|e| e.outcome == Outcome::Denied)
        .count()
}

#[tokio::test]
async fn wrong_tenant_wrong_role_and_anonymous_are_refused_everywhere() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let a_member = app.user("amy", false, &[("team-a", "member")]).await;
    let a_admin = app.user("adam", false, &[("team-a", "admin")]).await;
    let b_member = app.user("bea", false, &[("team-b", "member")]).await;
    let b_token: Value = call(
        &b_member,
        &app,
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "b"})),
    )
    .await
    .json()
    .await
    .unwrap();
    let b_token_id = b_token["token"]["id"].as_str().unwrap().to_owned();

    // Tenant A's member and admin against tenant B: not found, so B's existence does not leak.
    let across: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/api/v1/tenants/team-b".into(), None),
        (Method::GET, "/api/v1/tenants/team-b/members".into(), None),
        (
            Method::PUT,
            "/api/v1/tenants/team-b/members/amy".into(),
            Some(json!({"role": "admin"})),
        ),
        (
            Method::DELETE,
            "/api/v1/tenants/team-b/members/bea".into(),
            None,
        ),
        (Method::GET, "/api/v1/audit?tenant=team-b".into(), None),
        (Method::DELETE, format!("/api/v1/tokens/{b_token_id}"), None),
    ];
    for who in [&a_member, &a_admin] {
        for (method, path, body) in &across {
            let res = call(who, &app, method.clone(), path, body.clone()).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{method} {path}");
        }
        let res = call(
            who,
            &app,
            Method::POST,
            "/api/v1/tenants",
            Some(json!({"slug": "evil"})),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "create tenant");
        let list: Value = call(who, &app, Method::GET, "/api/v1/tenants", None)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            list.as_array().unwrap().len(),
            1,
            "only their own tenant: {list}"
        );
    }
    // A member tries the admin's actions in their own tenant.
    for (method, path, body) in [
        (
            Method::PUT,
            "/api/v1/tenants/team-a/members/bea",
            Some(json!({"role": "member"})),
        ),
        (Method::DELETE, "/api/v1/tenants/team-a/members/adam", None),
        (Method::GET, "/api/v1/audit", None),
        (Method::GET, "/api/v1/audit?tenant=team-a", None),
    ] {
        let res = call(&a_member, &app, method.clone(), path, body).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    // Adoption is the operators': a tenant's admin may not take clusters in either.
    let adopt = json!({"tenant": "team-a", "template": "capi", "reference": "default/work"});
    for who in [&a_member, &a_admin] {
        for (method, path, body) in [
            (Method::GET, "/api/v1/providers/capi/clusters", None),
            (Method::POST, "/api/v1/clusters/adopt", Some(adopt.clone())),
        ] {
            let res = call(who, &app, method.clone(), path, body).await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
        }
    }
    // Server functions (what the pages call).
    for (endpoint, form) in [
        ("tenant", vec![("slug", "team-b")]),
        ("audit", vec![("filter[tenant]", "team-b")]),
    ] {
        let res = a_admin
            .post(format!("{}/sfn/{endpoint}", app.url))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert!(!res.status().is_success(), "{endpoint}");
        let body = res.text().await.unwrap();
        assert!(body.contains("NotFound"), "{endpoint}: {body}");
    }
    let res = a_member
        .post(format!("{}/sfn/audit", app.url))
        .form(&[("filter[tenant]", "")])
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("Forbidden"));
    let res = call(&a_member, &app, Method::POST, "/sfn/tenants", None).await;
    let seen: Value = res.json().await.unwrap();
    assert_eq!(seen.as_array().unwrap().len(), 1);
    // The pages' writes (server functions their forms post to).
    for (who, path, form, error) in [
        (
            &a_admin,
            "/sfn/put_member",
            vec![("tenant", "team-b"), ("username", "amy"), ("role", "admin")],
            "tenant+not+found",
        ),
        (
            &a_admin,
            "/sfn/remove_member",
            vec![("tenant", "team-b"), ("username", "bea")],
            "tenant+not+found",
        ),
        (
            &a_member,
            "/sfn/put_member",
            vec![
                ("tenant", "team-a"),
                ("username", "bea"),
                ("role", "member"),
            ],
            "permission+denied",
        ),
        (
            &a_member,
            "/sfn/create_tenant",
            vec![("slug", "evil")],
            "permission+denied",
        ),
    ] {
        let res = who
            .post(format!("{}{path}", app.url))
            .form(&form)
            .send()
            .await
            .unwrap();
        let to = res.headers()["location"].to_str().unwrap();
        assert!(to.ends_with(&format!("?error={error}")), "{path} -> {to}");
    }
    // Every refusal above is in the audit trail, with the caller's name.
    assert!(
        denied_count(&app, "adam").await >= across.len() + 1 + 4,
        "adam's refusals audited"
    );
    assert!(
        denied_count(&app, "amy").await >= across.len() + 1 + 4 + 3,
        "amy's refusals audited"
    );

    // Nobody: every API route asks for authentication.
    let anonymous = app.browser();
    for (method, path) in [
        (Method::GET, "/api/v1/whoami"),
        (Method::GET, "/api/v1/tenants"),
        (Method::GET, "/api/v1/tenants/team-a"),
        (Method::GET, "/api/v1/tenants/team-a/members"),
        (Method::GET, "/api/v1/tokens"),
        (Method::GET, "/api/v1/audit"),
        (Method::GET, "/api/v1/providers/capi/clusters"),
        (Method::POST, "/api/v1/clusters/adopt"),
    ] {
        let res = call(&anonymous, &app, method.clone(), path, None).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    // The admin of A does manage A.
    let res = call(
        &a_admin,
        &app,
        Method::PUT,
        "/api/v1/tenants/team-a/members/bea",
        Some(json!({"role": "member"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let audit: Value = call(&a_admin, &app, Method::GET, "/api/v1/audit", None)
        .await
        .json()
        .await
        .unwrap();
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["tenant"] == "team-a"),
        "{audit}"
    );
    app.stop().await;
}

#[tokio::test]
async fn api_tokens_work_like_curl_and_stop_when_revoked() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let alice = app.user("alice", false, &[("team-a", "member")]).await;
    let res = call(
        &alice,
        &app,
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "laptop", "days": 7})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let listed: Value = call(&alice, &app, Method::GET, "/api/v1/tokens", None)
        .await
        .json()
        .await
        .unwrap();
    assert!(
        !listed.to_string().contains(&secret),
        "secrets are never listed"
    );

    // curl -H "Authorization: Bearer …" /api/v1/whoami
    let curl = reqwest::Client::new();
    let whoami = |token: String| {
        let (curl, url) = (curl.clone(), format!("{}/api/v1/whoami", app.url));
        async move {
            curl.get(url)
                .header(AUTHORIZATION, format!("Bearer {token}"))
                .send()
                .await
                .unwrap()
        }
    };
    let res = whoami(secret.clone()).await;
    assert_eq!(res.status(), StatusCode::OK);
    let me: Value = res.json().await.unwrap();
    assert_eq!(
        (me["username"].as_str(), me["tenants"][0]["tenant"].as_str()),
        (Some("alice"), Some("team-a"))
    );
    // Bearer requests need no Origin: no cookie, no CSRF.
    let res = curl
        .post(format!("{}/api/v1/tokens", app.url))
        .header(AUTHORIZATION, format!("Bearer {secret}"))
        .json(&json!({"name": "ci"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    let id = created["token"]["id"].as_str().unwrap();
    assert_eq!(
        call(
            &alice,
            &app,
            Method::DELETE,
            &format!("/api/v1/tokens/{id}"),
            None
        )
        .await
        .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(whoami(secret).await.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        whoami("kq_forged".into()).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let bad = call(
        &alice,
        &app,
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "x", "days": 999})),
    )
    .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert!(bad.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("days"));
    app.stop().await;
}

#[tokio::test]
async fn cross_origin_posts_and_expired_sessions_are_refused() {
    let app = TestApp::sqlite().await;
    let alice = app.user("alice", true, &[]).await;
    let no_origin = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    app.login(&no_origin, "alice", crate::helpers::PASSWORD)
        .await;
    // The login form itself posted without Origin and was refused: a browser always sends one.
    assert_eq!(
        app.get_as(&no_origin, "/api/v1/whoami").await.status(),
        StatusCode::UNAUTHORIZED
    );

    for origin in [None, Some("http://evil.test")] {
        let mut req = alice
            .post(format!("{}/api/v1/tokens", app.url))
            .json(&json!({"name": "x"}));
        req = match origin {
            Some(o) => req.header(ORIGIN, HeaderValue::from_static(o)),
            None => req.header(ORIGIN, HeaderValue::from_static("null")),
        };
        assert_eq!(
            req.send().await.unwrap().status(),
            StatusCode::FORBIDDEN,
            "{origin:?}"
        );
    }
    let res = alice
        .post(format!("{}/auth/logout", app.url))
        .header(ORIGIN, HeaderValue::from_static("http://evil.test"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "logout CSRF");
    assert_eq!(
        call(&alice, &app, Method::GET, "/api/v1/whoami", None)
            .await
            .status(),
        StatusCode::OK
    );

    // The session expires (here: removed by the purge, as after the idle timeout).
    app.on_server(|s| async move {
        let later = chrono::Utc::now() + chrono::Duration::days(365);
        s.kqueen
            .store()
            .sessions_purge_expired(later)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(
        call(&alice, &app, Method::GET, "/api/v1/whoami", None)
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    let page = call(&alice, &app, Method::GET, "/tokens", None).await;
    assert!(page.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("/login?next=%2Ftokens"));

    // A failed local login is audited.
    let res = app.login(&app.browser(), "alice", "wrong password!").await;
    assert_eq!(res.headers()["location"], "/login?error=invalid&next=%2F");
    app.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let app = TestApp::sqlite().await;
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/api/v1/whoami", &["get"][..]),
        ("/api/v1/tenants", &["get", "post"]),
        ("/api/v1/tenants/{slug}", &["get"]),
        ("/api/v1/tenants/{slug}/members", &["get"]),
        (
            "/api/v1/tenants/{slug}/members/{username}",
            &["put", "delete"],
        ),
        ("/api/v1/tokens", &["get", "post"]),
        ("/api/v1/tokens/{id}", &["delete"]),
        ("/api/v1/audit", &["get"]),
        ("/api/v1/providers/{name}/clusters", &["get"]),
        ("/api/v1/clusters/adopt", &["post"]),
        ("/api/v1/clusters/{id}/credential", &["post"]),
    ] {
        for m in methods {
            assert!(
                paths.get(path).and_then(|p| p.get(*m)).is_some(),
                "{m} {path} documented"
            );
        }
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    app.stop().await;
}

#[tokio::test]
async fn bad_input_gets_a_clear_client_error() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let op = app.user("root", true, &[]).await;
    for (method, path, body, field) in [
        (Method::GET, "/api/v1/audit?since=yesterday", None, "since"),
        (Method::GET, "/api/v1/audit?until=2026-13-40", None, "until"),
        (Method::GET, "/api/v1/audit?format=xml", None, "format"),
        (
            Method::POST,
            "/api/v1/tenants",
            Some(json!({"slug": "Bad Slug"})),
            "slug",
        ),
        (
            Method::PUT,
            "/api/v1/tenants/team-a/members/root",
            Some(json!({"role": "owner"})),
            "role",
        ),
        (Method::DELETE, "/api/v1/tokens/not-a-uuid", None, "id"),
    ] {
        let res = call(&op, &app, method.clone(), path, body).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{method} {path}");
        let error: Value = res.json().await.unwrap();
        assert!(
            error["error"].as_str().unwrap().starts_with(field),
            "{method} {path}: {error}"
        );
    }
    // A body that is not JSON at all is refused before any handler runs.
    let res = op
        .post(format!("{}/api/v1/tenants", app.url))
        .body("slug=x")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_client_error(), "{}", res.status());
    app.stop().await;
}

#[tokio::test]
async fn fleet_routes_refuse_the_wrong_tenant_role_and_nobody() {
    use crate::clusters::wait_for_state;
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let op = app.user("olga", true, &[]).await;
    let a_member = app.user("amy", false, &[("team-a", "member")]).await;
    let a_admin = app.user("adam", false, &[("team-a", "admin")]).await;
    let b_member = app.user("bea", false, &[("team-b", "member")]).await;
    let loner = app.user("lou", false, &[]).await;
    for (path, body) in [
        (
            "/api/v1/providers",
            json!({"name": "existing", "kind": "import"}),
        ),
        (
            "/api/v1/templates",
            json!({"name": "import", "provider": "existing"}),
        ),
    ] {
        let res = call(&op, &app, Method::POST, path, Some(body)).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{path}");
    }
    // Tenant B's cluster, synced: the target of everything below.
    let created: Value = call(
        &b_member,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(
            json!({"tenant": "team-b", "name": "bprod", "template": "import",
                    "parameters": {"kubeconfig": fake.admin_kubeconfig()}}),
        ),
    )
    .await
    .json()
    .await
    .unwrap();
    let id = created["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &b_member, &id, "ready").await;
    let inventory = format!("/api/v1/clusters/{id}/inventory");
    let sync = format!("{inventory}/sync");
    let res = call(&b_member, &app, Method::POST, &sync, None).await;
    assert_eq!(res.status(), StatusCode::OK);

    // Tenant A's member and admin: B's cluster is not found; fleet queries naming B are empty.
    for who in [&a_member, &a_admin] {
        for (method, path) in [(Method::GET, &inventory), (Method::POST, &sync)] {
            let res = call(who, &app, method.clone(), path, None).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{method} {path}");
        }
        for path in [
            "/api/v1/fleet/images?tenant=team-b",
            "/api/v1/fleet/images/history?tenant=team-b",
            "/api/v1/fleet/versions?tenant=team-b",
            "/api/v1/fleet/findings?tenant=team-b",
            "/api/v1/fleet/versions?cluster=bprod",
        ] {
            let body: Value = call(who, &app, Method::GET, path, None)
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(body["total"], 0, "{path}: {body}");
        }
    }
    let body: Value = call(
        &a_admin,
        &app,
        Method::GET,
        "/api/v1/fleet?tenant=team-b",
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(body["clusters"], 0, "{body}");
    // The wrong role: the dashboard is for operators and tenant admins; a user in no tenant
    // sees no fleet query at all.
    let res = call(&a_member, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    for path in [
        "/api/v1/fleet",
        "/api/v1/fleet/images",
        "/api/v1/fleet/images/history",
        "/api/v1/fleet/versions",
        "/api/v1/fleet/findings",
    ] {
        let res = call(&loner, &app, Method::GET, path, None).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
    }
    // Server functions and the Sync now form.
    let sfn = |who: &reqwest::Client, endpoint: &str, form: Vec<(&'static str, String)>| {
        let req = who.post(format!("{}/sfn/{endpoint}", app.url)).form(&form);
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    assert!(sfn(&a_member, "fleet", vec![]).await.contains("Forbidden"));
    assert!(sfn(&a_admin, "cluster", vec![("id", id.clone())])
        .await
        .contains("NotFound"));
    for endpoint in [
        "fleet_images",
        "fleet_image_history",
        "fleet_versions",
        "fleet_findings",
    ] {
        let form = vec![("query[tenant]", "team-b".to_owned())];
        let page: Value = serde_json::from_str(&sfn(&a_admin, endpoint, form).await).unwrap();
        let total = if endpoint == "fleet_findings" {
            &page["list"]["total"]
        } else {
            &page["total"]
        };
        assert_eq!(total, 0, "{endpoint}: {page}");
        assert!(
            sfn(&loner, endpoint, vec![("query[q]", String::new())])
                .await
                .contains("Forbidden"),
            "{endpoint}"
        );
    }
    let form = format!("{}/sfn/sync_inventory", app.url);
    let res = a_member
        .post(&form)
        .form(&[("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        format!("/clusters/{id}?error=cluster+not+found")
    );
    // Refusals are audited.
    assert!(
        denied_count(&app, "amy").await >= 3,
        "amy's refusals audited"
    );
    assert!(
        denied_count(&app, "lou").await >= 5,
        "lou's refusals audited"
    );

    // Nobody: every fleet route asks for authentication.
    let anonymous = app.browser();
    for (method, path) in [
        (Method::GET, inventory.as_str()),
        (Method::POST, sync.as_str()),
        (Method::GET, "/api/v1/fleet"),
        (Method::GET, "/api/v1/fleet/images"),
        (Method::GET, "/api/v1/fleet/images/history"),
        (Method::GET, "/api/v1/fleet/versions"),
        (Method::GET, "/api/v1/fleet/findings"),
    ] {
        let res = call(&anonymous, &app, method.clone(), path, None).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    for endpoint in [
        "fleet",
        "fleet_images",
        "fleet_image_history",
        "fleet_versions",
        "fleet_findings",
    ] {
        let body = sfn(&anonymous, endpoint, vec![("query[q]", String::new())]).await;
        assert!(body.contains("Unauthenticated"), "{endpoint}: {body}");
    }
    let res = anonymous
        .post(&form)
        .form(&[("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        format!("/login?next=%2Fclusters%2F{id}")
    );
    app.stop().await;
}
