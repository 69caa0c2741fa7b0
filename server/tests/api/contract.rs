//! The API's contract as documented: `POST /api/v1/clusters {name, template, parameters}`
//! works without a tenant for callers of one tenant; malformed requests answer the error
//! shape, `{"error": "...", "status": N}`, never plain text; a template's tenant list reads
//! back as written, however many tenants there are; no route reads a body over 2 MiB; the
//! portal and the API send the same audit entries (one type, `kqueen_dto`); the shared etcd
//! quota is bytes in the API and a size in the portal.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, define, installer};
use crate::helpers::TestApp;

#[tokio::test]
async fn a_request_without_tenant_goes_to_the_callers_only_tenant() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let max = app
        .user("max", false, &[("team-a", "member"), ("team-b", "admin")])
        .await;
    let nemo = app.user("nemo", false, &[]).await;
    let scripts = tempfile::tempdir().unwrap();
    let provider = json!({"name": "lab", "kind": "command",
        "settings": {"create_command": installer(scripts.path()), "timeout_seconds": 60}});
    let template = json!({"name": "small", "provider": "lab"});
    define(&app, &olga, provider, template).await;

    // Exactly the documented body: the caller's only tenant is used.
    let request =
        |name: &str| json!({"name": name, "template": "small", "parameters": {"node_count": 1}});
    let (status, body) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(request("dev")),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["cluster"]["tenant"], "team-a", "{body}");

    // Several tenants, or none: 400 in the API's shape, saying why.
    for (who, name, why) in [
        (&max, "two", "several tenants"),
        (&nemo, "none", "no tenant"),
        (&olga, "op", "no tenant"),
    ] {
        let (status, body) = call(
            who,
            &app,
            Method::POST,
            "/api/v1/clusters",
            Some(request(name)),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
        assert_eq!(body["status"], 400, "{body}");
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains("tenant") && error.contains(why),
            "{name}: {error}"
        );
    }
    // Naming the tenant still works for them.
    let mut named = request("two");
    named["tenant"] = json!("team-b");
    let (status, body) = call(&max, &app, Method::POST, "/api/v1/clusters", Some(named)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["cluster"]["tenant"], "team-b", "{body}");

    // The OpenAPI document says the tenant is optional.
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let schema = &doc["components"]["schemas"]["ClusterIn"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        required.contains(&"name") && !required.contains(&"tenant"),
        "{schema}"
    );
    assert!(schema["properties"]["tenant"].is_object(), "{schema}");
    app.stop().await;
}

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
            StatusCode::BAD_REQUEST,
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
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::PUT,
            "/api/v1/tenants/team-a/quota",
            Some("application/json"),
            "{\"max_clusters\": -1}",
            StatusCode::BAD_REQUEST,
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

#[tokio::test]
async fn a_template_limited_to_a_tenant_past_the_first_500_stays_limited() {
    let app = TestApp::sqlite().await;
    app.on_server(|s| async move {
        for i in 0..=kqueen_core::page::Page::MAX_LIMIT {
            let input = kqueen_core::tenant::NewTenant {
                slug: format!("t-{i:04}"),
                display_name: None,
            };
            let system = kqueen_core::Actor::system();
            s.kqueen
                .tenancy()
                .create_tenant(&system, input)
                .await
                .unwrap();
        }
    })
    .await;
    let olga = app.user("olga", true, &[]).await;
    let scripts = tempfile::tempdir().unwrap();
    let provider = json!({"name": "lab", "kind": "command",
        "settings": {"create_command": installer(scripts.path())}});
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // The last tenant by slug: beyond the first page of the tenant list.
    let last = format!("t-{:04}", kqueen_core::page::Page::MAX_LIMIT);
    let template = json!({"name": "small", "provider": "lab", "tenants": [last, "t-0000"]});
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/templates",
        Some(template),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut tenants = body["tenants"].as_array().unwrap().clone();
    tenants.sort_by_key(|t| t.to_string());
    assert_eq!(tenants, vec![json!("t-0000"), json!(last)], "{body}");
    for path in ["/api/v1/templates/small", "/api/v1/templates"] {
        let (status, body) = call(&olga, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let view = if body.is_array() { &body[0] } else { &body };
        assert_eq!(
            view["tenants"].as_array().unwrap().len(),
            2,
            "{path}: {body}"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn oversized_bodies_are_refused_before_any_write() {
    let app = TestApp::sqlite().await;
    app.user("amy", false, &[]).await;
    let huge = "x".repeat(kqueen_server::routes::BODY_LIMIT + 1);
    // A page's write (a server function reads its body itself) and an API route.
    // Each on a fresh connection: the server closes one whose body it refused.
    for path in ["/sfn/create_token", "/api/v1/tokens"] {
        let amy = app.browser();
        app.login(&amy, "amy", crate::helpers::PASSWORD).await;
        let res = amy
            .post(format!("{}{path}", app.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("name={huge}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
    // Nothing was written (a fresh connection: the server closes one whose body it refused).
    let fresh = app.browser();
    app.login(&fresh, "amy", crate::helpers::PASSWORD).await;
    let (status, tokens) = call(&fresh, &app, Method::GET, "/api/v1/tokens", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tokens.as_array().map(Vec::len), Some(0), "{tokens}");
    app.stop().await;
}

#[tokio::test]
async fn the_portal_and_the_api_send_the_same_audit_entries_tenants_members_and_tokens() {
    let app = TestApp::sqlite().await;
    let olga = app.user("olga", true, &[]).await;
    app.user("amy", false, &[]).await;
    let (status, api) = call(&olga, &app, Method::GET, "/api/v1/audit?limit=50", None).await;
    assert_eq!(status, StatusCode::OK);
    let page = app
        .server_fn(&olga, "audit", &[("filter[tenant]", "")])
        .await;
    let (api, portal) = (api.as_array().unwrap(), page["events"].as_array().unwrap());
    assert!(api.len() >= 4, "{api:?}");
    // Newest first in both; the portal's page may end earlier.
    assert_eq!(&api[..portal.len().min(api.len())], &portal[..], "{page}");
    for field in ["id", "time", "actor", "action", "target", "result"] {
        assert!(portal[0].get(field).is_some(), "{field}: {}", portal[0]);
    }
    // Tenants and a tenant's members, likewise.
    app.on_server(|s| async move {
        let system = kqueen_core::Actor::system();
        let team = kqueen_core::tenant::NewTenant {
            slug: "team-a".into(),
            display_name: Some("Team A".into()),
        };
        s.kqueen
            .tenancy()
            .create_tenant(&system, team)
            .await
            .unwrap();
        let role = kqueen_core::identity::Role::Member;
        s.kqueen
            .tenancy()
            .put_member(&system, "team-a", "amy", role)
            .await
            .unwrap();
    })
    .await;
    let (_, api) = call(&olga, &app, Method::GET, "/api/v1/tenants", None).await;
    let portal = app.server_fn(&olga, "tenants", &[]).await;
    assert_eq!(api, portal);
    assert_eq!(api[0]["slug"], "team-a", "{api}");
    let (_, api) = call(
        &olga,
        &app,
        Method::GET,
        "/api/v1/tenants/team-a/members",
        None,
    )
    .await;
    let portal = app.server_fn(&olga, "tenant", &[("slug", "team-a")]).await;
    assert_eq!(api, portal["members"]);
    assert_eq!(api[0]["username"], "amy", "{api}");
    // API tokens, likewise (one active, one revoked).
    for name in ["ci", "old"] {
        let body = serde_json::json!({"name": name, "days": 30});
        let (status, _) = call(&olga, &app, Method::POST, "/api/v1/tokens", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (_, api) = call(&olga, &app, Method::GET, "/api/v1/tokens", None).await;
    let old = api
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "old")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/v1/tokens/{old}");
    let (status, _) = call(&olga, &app, Method::DELETE, &path, None).await;
    assert!(status.is_success(), "{status}");
    let (_, api) = call(&olga, &app, Method::GET, "/api/v1/tokens", None).await;
    let portal = app.server_fn(&olga, "tokens", &[]).await;
    assert_eq!(api, portal["tokens"]);
    let active: Vec<_> = api
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].clone(), t["active"].clone()))
        .collect();
    assert!(
        active.contains(&(serde_json::json!("ci"), serde_json::json!(true))),
        "{api}"
    );
    assert!(
        active.contains(&(serde_json::json!("old"), serde_json::json!(false))),
        "{api}"
    );
    app.stop().await;
}

/// The shared etcd quota: bytes on `/api/v1` (a 64-bit number; PUT replaces the whole quota,
/// so leaving it out removes it), a size in the portal's form (`1.5 GiB`, a plain number
/// being MiB) with a form error for anything else; operators only. The fleet API lists each
/// tenant's usage against it (`storage`), and the OpenAPI document describes all of it.
#[tokio::test]
async fn the_shared_storage_quota_is_bytes_in_the_api_and_a_size_in_the_portal() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "admin")]).await;
    let path = "/api/v1/tenants/team-a/quota";
    let gib = json!({"max_shared_storage_bytes": 1u64 << 30});

    let (status, _) = call(&amy, &app, Method::PUT, path, Some(gib.clone())).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "tenant admins do not set quotas"
    );
    let (status, body) = call(&olga, &app, Method::PUT, path, Some(gib)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["max_shared_storage_bytes"], 1u64 << 30, "{body}");
    let (_, q) = call(&amy, &app, Method::GET, path, None).await;
    assert_eq!(q["max_shared_storage_bytes"], 1u64 << 30, "{q}");
    assert_eq!(q["used_shared_storage_bytes"], 0, "{q}");
    assert_eq!(q["max_clusters"], Value::Null, "{q}");

    for (value, status) in [
        (json!(-1), StatusCode::BAD_REQUEST),
        (json!("1 GiB"), StatusCode::BAD_REQUEST),
        (json!(0), StatusCode::BAD_REQUEST),
        (json!((1u64 << 50) + 1), StatusCode::BAD_REQUEST),
    ] {
        let body = json!({"max_shared_storage_bytes": value});
        let (got, answer) = call(&olga, &app, Method::PUT, path, Some(body)).await;
        assert_eq!(got, status, "{value}: {answer}");
        assert_eq!(answer["status"], status.as_u16(), "{answer}");
    }
    let (_, q) = call(&olga, &app, Method::GET, path, None).await;
    assert_eq!(
        q["max_shared_storage_bytes"],
        1u64 << 30,
        "refusals change nothing"
    );
    let (status, _) = call(
        &olga,
        &app,
        Method::PUT,
        path,
        Some(json!({"max_nodes": 9})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, q) = call(&olga, &app, Method::GET, path, None).await;
    assert_eq!(q["max_shared_storage_bytes"], Value::Null, "{q}");

    // The portal's form takes a size; garbage comes back as the form's error.
    let post = |form: Vec<(&'static str, &'static str)>| {
        let req = olga.post(format!("{}/sfn/set_quota", app.url)).form(&form);
        async move {
            let res = req.send().await.unwrap();
            res.headers()["location"].to_str().unwrap().to_owned()
        }
    };
    let to = post(vec![
        ("tenant", "team-a"),
        ("max_shared_storage", "1.5 GiB"),
    ])
    .await;
    assert_eq!(to, "/tenants/team-a");
    let (_, q) = call(&olga, &app, Method::GET, path, None).await;
    assert_eq!(q["max_shared_storage_bytes"], 3u64 << 29, "{q}");
    for garbage in ["-5", "lots", "2 GB", "0"] {
        let to = post(vec![
            ("tenant", "team-a"),
            ("max_nodes", "12"),
            ("max_shared_storage", garbage),
        ])
        .await;
        assert_eq!(to, "/tenants/team-a", "{garbage}");
        // The form comes back as it was typed, the error at the field, once.
        let page = app.get_as(&olga, &to).await.text().await.unwrap();
        assert!(
            page.contains(r#"id="q-storage-error""#)
                && page.contains(r#"class="field-error">Must be a size such as 512 MiB"#)
                && page.contains(&format!(r#"name="max_shared_storage" value="{garbage}""#))
                && page.contains(r#"name="max_nodes" value="12""#),
            "{garbage}: {page}"
        );
        let again = app.get_as(&olga, &to).await.text().await.unwrap();
        assert!(!again.contains("q-storage-error"), "{garbage}: shown once");
    }
    let (_, q) = call(&olga, &app, Method::GET, path, None).await;
    assert_eq!(q["max_shared_storage_bytes"], 3u64 << 29, "unchanged");
    let page = app
        .get_as(&olga, "/tenants/team-a")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<dd id="quota-storage">0 B of 1.5 GiB</dd>"#),
        "{page}"
    );
    assert!(page.contains(r#"value="1536 MiB""#), "exact, to save again");

    // The member form comes back as typed too: the name, the role, the error at the name.
    let res = olga
        .post(format!("{}/sfn/put_member", app.url))
        .form(&[
            ("tenant", "team-a"),
            ("username", "no spaces allowed"),
            ("role", "admin"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/tenants/team-a");
    let page = app
        .get_as(&olga, "/tenants/team-a")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"value="no spaces allowed""#)
            && page.contains(r#"id="member-username-error""#)
            && page.contains(r#"<option value="admin" selected"#)
            && !page.contains(r#"id="q-storage-error""#),
        "{page}"
    );

    // The fleet API: per tenant usage against the quota for operators (none here: no
    // hosted cluster yet), nothing for tenant admins.
    for who in [&olga, &amy] {
        let (status, fleet) = call(who, &app, Method::GET, "/api/v1/fleet", None).await;
        assert_eq!(status, StatusCode::OK, "{fleet}");
        assert_eq!(fleet["storage"], json!([]), "{fleet}");
    }

    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [
        ("QuotaIo", "max_shared_storage_bytes"),
        ("QuotaOut", "used_shared_storage_bytes"),
        ("FleetOut", "storage"),
        ("FleetClusterOut", "shared_storage"),
        ("TenantStorage", "quota_bytes"),
    ] {
        // QuotaOut flattens QuotaIo: its own fields sit in an `allOf`.
        let described = &schemas[schema];
        assert!(
            described["properties"][field].is_object()
                || described["allOf"][1]["properties"][field].is_object(),
            "{schema}.{field}: {described}"
        );
    }
    app.stop().await;
}
