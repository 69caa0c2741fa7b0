//! The REST API and the portal send the same providers, templates, provisioner kinds,
//! clusters and quotas: one set of types (`kqueen_dto`), so the JSON of `/api/v1/…` equals what the
//! portal's server functions hand the pages, field for field.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::clusters::{call, define, installer, wait_for_state};
use crate::helpers::TestApp;

#[tokio::test]
async fn the_portal_and_the_api_send_the_same_catalog_clusters_and_quota() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "admin")]).await;
    let scripts = tempfile::tempdir().unwrap();
    let provider = json!({"name": "lab", "kind": "command", "description": "the lab",
        "settings": {"create_command": installer(scripts.path()), "timeout_seconds": 60}});
    let template = json!({"name": "small", "provider": "lab", "tenants": ["team-a"],
        "overrides": {"node_count": {"min": 1, "max": 3, "default": "2"}},
        "admin_access": "cluster-admin"});
    define(&app, &olga, provider, template).await;

    // The catalog (operators): kinds, providers, templates.
    let page = app.server_fn(&olga, "providers", &[]).await;
    for (path, field) in [
        ("/api/v1/provider-kinds", "kinds"),
        ("/api/v1/providers", "providers"),
        ("/api/v1/templates", "templates"),
    ] {
        let (status, api) = call(&olga, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {api}");
        assert_eq!(api, page[field], "{path}");
    }
    let template = &page["templates"][0];
    assert_eq!(template["overrides"]["node_count"]["max"], 3, "{template}");
    assert_eq!(template["kind"], "command", "{template}");
    assert!(page["kinds"].as_array().unwrap().len() >= 5, "{page}");

    // The request form offers the templates the API lists for the tenant.
    let (_, api) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/templates?tenant=team-a",
        None,
    )
    .await;
    let form = app
        .server_fn(
            &amy,
            "new_cluster",
            &[("tenant", "team-a"), ("template", "small")],
        )
        .await;
    assert_eq!(api, form["templates"]);
    assert_eq!(api[0], form["template"]);

    // Clusters: the list and one cluster with its operations and timeline.
    let request = json!({"name": "dev", "template": "small", "parameters": {"node_count": 2}});
    let (status, body) = call(&amy, &app, Method::POST, "/api/v1/clusters", Some(request)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &amy, &id, "ready").await;
    let (_, api) = call(&amy, &app, Method::GET, "/api/v1/clusters", None).await;
    let list = app.server_fn(&amy, "clusters", &[]).await;
    assert_eq!(api["items"], list["clusters"]);
    assert_eq!(api["items"][0]["state"], "ready", "{api}");
    let (_, api) = call(
        &amy,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    let page = app.server_fn(&amy, "cluster", &[("id", &id)]).await;
    assert_eq!(api, page["detail"]);
    assert_eq!(api["admin_access"], "cluster-admin", "{api}");
    assert_eq!(api["parameters"]["node_count"], "2", "{api}");
    assert!(
        api["operations"].as_array().is_some_and(|o| !o.is_empty())
            && api["events"].as_array().is_some_and(|e| !e.is_empty()),
        "{api}"
    );
    assert_eq!(
        page["admin_access_label"],
        "cluster-admin (the whole cluster)"
    );

    // The tenant's quota and usage.
    let body = json!({"max_clusters": 5, "max_shared_storage_bytes": 1u64 << 30});
    let path = "/api/v1/tenants/team-a/quota";
    let (status, _) = call(&olga, &app, Method::PUT, path, Some(body)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, api) = call(&amy, &app, Method::GET, path, None).await;
    let page = app.server_fn(&amy, "quota", &[("tenant", "team-a")]).await;
    assert_eq!(api, page["usage"]);
    assert_eq!(
        (&api["max_clusters"], &api["used_clusters"]),
        (&json!(5), &json!(1))
    );
    app.stop().await;
}
