//! Clusters over /api/v1 with the real engine and the `command` provisioner driving a
//! script: an operator defines a provider and a template, a member requests a cluster (202 at
//! once), follows its progress to Ready, operators download the admin kubeconfig, the
//! cluster is deleted. Wrong tenants and roles are refused; the OpenAPI document lists it all.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::TestApp;

pub(crate) async fn call(
    client: &reqwest::Client,
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = client.request(method, format!("{}{path}", app.url));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Defines `provider` and then `template` as operator `who`, asserting both are created.
pub(crate) async fn define(app: &TestApp, who: &reqwest::Client, provider: Value, template: Value) {
    for (path, body) in [
        ("/api/v1/providers", provider),
        ("/api/v1/templates", template),
    ] {
        let (status, answer) = call(who, app, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{path}: {answer}");
    }
}

/// An installer that reports steps and progress and writes a kubeconfig.
pub(crate) fn installer(dir: &std::path::Path) -> String {
    let path = dir.join("install.sh");
    std::fs::write(
        &path,
        r#"#!/bin/sh
echo "::step Creating $KQ_PARAM_NODE_COUNT machines"
echo "::progress 40"
echo "machines for $KQ_CLUSTER_NAME in $KQ_TENANT are up"
cat > "$KQ_KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://$KQ_CLUSTER_NAME.example.test:6443
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: installer-token}
EOF
echo "::progress 90"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// The messages of cluster `id`'s timeline as `who` reads it over /api/v1, oldest first.
pub(crate) async fn timeline(app: &TestApp, who: &reqwest::Client, id: &str) -> Vec<String> {
    let path = format!("/api/v1/clusters/{id}/events");
    let (status, events) = call(who, app, Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) async fn wait_for_state(
    app: &TestApp,
    who: &reqwest::Client,
    id: &str,
    want: &str,
) -> Value {
    for _ in 0..200 {
        let (status, body) = call(
            who,
            app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        if status == StatusCode::OK && body["state"] == want {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cluster {id} never reached {want}");
}

#[tokio::test]
async fn operators_define_providers_members_request_clusters_through_the_api() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let bea = app.user("bea", false, &[("team-b", "member")]).await;
    let scripts = tempfile::tempdir().unwrap();
    let script = installer(scripts.path());

    // Only operators manage the catalogue; secrets never come back.
    let provider = json!({"name": "lab", "kind": "command", "description": "Lab installer",
        "settings": {"create_command": script, "timeout_seconds": 60}});
    let (status, _) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "command");
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(json!({"name": "x", "kind": "nope"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("kind"));
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(json!({"name": "y", "kind": "command", "settings": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"].as_str().unwrap().contains("create_command"),
        "{body}"
    );
    // A malformed secret environment is refused without echoing it.
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(json!({"name": "z", "kind": "command",
            "settings": {"create_command": "/bin/true", "environment": "lower=hunter2"}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("environment") && !error.contains("hunter2"),
        "{body}"
    );

    let template = json!({"name": "small", "provider": "lab", "tenants": ["team-a"],
        "overrides": {"node_count": {"max": 3, "default": "2"}}});
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/templates",
        Some(template),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // What the template's provider can do: "lab" has only a create command.
    assert_eq!(
        body["capabilities"],
        json!({"scale": false, "upgrade": false, "deletes_infrastructure": false,
               "replace_node": false}),
        "{body}"
    );
    let node_count = body["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "node_count")
        .unwrap()
        .clone();
    assert_eq!(
        (node_count["max"].clone(), node_count["default"].clone()),
        (json!(3), json!(2))
    );
    let (status, _) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/templates",
        Some(
            json!({"name": "wide", "provider": "lab", "overrides": {"node_count": {"max": 1000}}}),
        ),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "templates may not widen ranges"
    );

    // Members see the templates offered to their tenant; team-b sees none.
    let (_, offered) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/templates?tenant=team-a",
        None,
    )
    .await;
    assert_eq!(offered.as_array().unwrap().len(), 1);
    let (_, offered) = call(
        &bea,
        &app,
        Method::GET,
        "/api/v1/templates?tenant=team-b",
        None,
    )
    .await;
    assert_eq!(offered.as_array().unwrap().len(), 0);

    // The request answers 202 at once with the cluster and its operation.
    let req = json!({"tenant": "team-a", "name": "dev", "template": "small", "parameters": {"node_count": 3}});
    let (status, body) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(req.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["cluster"]["state"], "provisioning");
    assert_eq!(body["operation"]["kind"], "create");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    // Invalid input: clear 4xx answers.
    let bad = [
        (
            json!({"tenant": "team-a", "name": "Dev!", "template": "small"}),
            StatusCode::BAD_REQUEST,
            "name",
        ),
        (
            json!({"tenant": "team-a", "name": "dev2", "template": "small", "parameters": {"node_count": 9}}),
            StatusCode::BAD_REQUEST,
            "at most 3",
        ),
        (
            json!({"tenant": "team-a", "name": "dev", "template": "small"}),
            StatusCode::CONFLICT,
            "already",
        ),
        (
            // Names a template that does not exist: 404, like a path naming nothing.
            json!({"tenant": "team-a", "name": "dev3", "template": "nope"}),
            StatusCode::NOT_FOUND,
            "template",
        ),
    ];
    for (input, want, text) in bad {
        let (status, body) = call(
            &amy,
            &app,
            Method::POST,
            "/api/v1/clusters",
            Some(input.clone()),
        )
        .await;
        assert_eq!(status, want, "{input}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(text),
            "{input}: {body}"
        );
    }
    // Another tenant's member can neither request in team-a nor see the cluster.
    let (status, _) = call(&bea, &app, Method::POST, "/api/v1/clusters", Some(req)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for (method, path) in [
        (Method::GET, format!("/api/v1/clusters/{id}")),
        (Method::DELETE, format!("/api/v1/clusters/{id}")),
        (Method::GET, format!("/api/v1/clusters/{id}/kubeconfig")),
        (Method::GET, format!("/api/v1/clusters/{id}/events")),
    ] {
        let (status, _) = call(&bea, &app, method.clone(), &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    let (_, list) = call(&bea, &app, Method::GET, "/api/v1/clusters", None).await;
    assert_eq!(list["total"], 0);
    for (method, path, body) in [
        (
            Method::POST,
            format!("/api/v1/clusters/{id}/scale"),
            Some(json!({"node_count": 2})),
        ),
        (
            Method::POST,
            format!("/api/v1/clusters/{id}/upgrade"),
            Some(json!({"kubernetes_version": "1.34"})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/clusters/{id}/access?user=amy"),
            None,
        ),
        (
            Method::GET,
            "/api/v1/templates?tenant=team-a".to_owned(),
            None,
        ),
        (Method::GET, "/api/v1/tenants/team-a/quota".to_owned(), None),
    ] {
        let (status, _) = call(&bea, &app, method.clone(), &path, body).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{method} {path} as another tenant"
        );
    }
    // A member tries the operators' actions: refused.
    for (method, path, body) in [
        (Method::GET, "/api/v1/provider-kinds", None),
        (Method::GET, "/api/v1/providers", None),
        (Method::GET, "/api/v1/providers/lab", None),
        (
            Method::PUT,
            "/api/v1/providers/lab",
            Some(json!({"name": "lab"})),
        ),
        (Method::DELETE, "/api/v1/providers/lab", None),
        (Method::GET, "/api/v1/templates", None),
        (
            Method::POST,
            "/api/v1/templates",
            Some(json!({"name": "t", "provider": "lab"})),
        ),
        (
            Method::PUT,
            "/api/v1/templates/small",
            Some(json!({"name": "small", "provider": "lab"})),
        ),
        (Method::DELETE, "/api/v1/templates/small", None),
    ] {
        let (status, _) = call(&amy, &app, method.clone(), path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path} as a member");
    }
    // Nobody: authentication required everywhere.
    let anonymous = app.browser();
    for (method, path) in [
        (Method::GET, "/api/v1/clusters".to_owned()),
        (Method::POST, "/api/v1/clusters".to_owned()),
        (Method::GET, format!("/api/v1/clusters/{id}")),
        (Method::GET, format!("/api/v1/clusters/{id}/kubeconfig")),
        (Method::GET, "/api/v1/providers".to_owned()),
        (Method::GET, "/api/v1/templates".to_owned()),
    ] {
        let (status, _) = call(&anonymous, &app, method.clone(), &path, Some(json!({}))).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} anonymously"
        );
    }
    let denied = app
        .audit(kqueen_core::audit::AuditQuery {
            actor: Some("bea".into()),
            ..Default::default()
        })
        .await
        .into_iter()
        .filter(|e| e.outcome == kqueen_core::audit::Outcome::Denied)
        .count();
    assert!(denied >= 9, "bea's refusals are audited ({denied})");

    // The engine provisions in the background.
    let ready = wait_for_state(&app, &amy, &id, "ready").await;
    assert_eq!(ready["endpoint"], "https://dev.example.test:6443");
    assert_eq!(ready["node_count"], 3);
    assert_eq!(ready["progress"], 100);
    // The portal's cluster page carries the same cluster, operations, timeline and
    // capabilities as the API (one type, `kqueen_dto::clusters::ClusterDetail`).
    let page = app.server_fn(&amy, "cluster", &[("id", id.as_str())]).await;
    assert_eq!(page["detail"], ready, "{page}");
    assert_eq!(
        page["detail"]["operations"][0]["state"], "succeeded",
        "{page}"
    );
    // Worker nodes join hosted clusters only; another tenant does not see the cluster.
    let join = format!("/api/v1/clusters/{id}/join");
    let (status, body) = call(&amy, &app, Method::GET, &join, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("only hosted clusters"),
        "{body}"
    );
    let (status, _) = call(&bea, &app, Method::GET, &join, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&amy, &app, Method::DELETE, &format!("{join}/abcdef"), None).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // The portal's join page says the same.
    let html = app
        .get_as(&amy, &format!("/clusters/{id}/join"))
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("only hosted clusters"), "{html}");
    let messages: Vec<&str> = ready["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert!(messages.contains(&"Creating 3 machines"), "{messages:?}");
    assert!(
        messages.contains(&"machines for dev in team-a are up"),
        "{messages:?}"
    );
    let (_, list) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/clusters?state=ready",
        None,
    )
    .await;
    assert_eq!(list["total"], 1);
    let (status, _) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/clusters?state=sleepy",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Operators download the stored admin kubeconfig (audited); the secret is YAML as stored.
    let res = olga
        .get(format!("{}/api/v1/clusters/{id}/kubeconfig", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/yaml");
    assert!(res.text().await.unwrap().contains("installer-token"));
    let downloads = app
        .audit(kqueen_core::audit::AuditQuery {
            action: Some("kubeconfig.admin".into()),
            ..Default::default()
        })
        .await;
    assert_eq!(downloads.len(), 1);
    assert_eq!(downloads[0].actor, "olga");

    // Quota: operators set it, members cannot; the next request over it is refused.
    let (status, _) = call(
        &amy,
        &app,
        Method::PUT,
        "/api/v1/tenants/team-a/quota",
        Some(json!({"max_clusters": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/tenants/team-a/quota",
        Some(json!({"max_clusters": 1, "max_nodes": null, "cluster_ttl_hours": 24})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, q) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/tenants/team-a/quota",
        None,
    )
    .await;
    assert_eq!(
        (q["max_clusters"].clone(), q["used_clusters"].clone()),
        (json!(1), json!(1))
    );
    let (status, body) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(json!({"tenant": "team-a", "name": "dev2", "template": "small"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["error"].as_str().unwrap().contains("quota"), "{body}");

    // Delete: 202 with the operation, then the cluster is gone. The provider can then go.
    let (status, _) = call(&olga, &app, Method::DELETE, "/api/v1/providers/lab", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "in use");
    let (status, body) = call(
        &amy,
        &app,
        Method::DELETE,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["kind"], "delete");
    for _ in 0..200 {
        let (status, _) = call(
            &amy,
            &app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        if status == StatusCode::NOT_FOUND {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = call(
        &amy,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&olga, &app, Method::DELETE, "/api/v1/templates/small", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // Everything is in the OpenAPI document.
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    for path in [
        "/api/v1/providers",
        "/api/v1/providers/{name}",
        "/api/v1/templates",
        "/api/v1/templates/{name}",
        "/api/v1/clusters",
        "/api/v1/clusters/{id}",
        "/api/v1/clusters/{id}/kubeconfig",
        "/api/v1/clusters/{id}/events",
        "/api/v1/clusters/{id}/join",
        "/api/v1/clusters/{id}/join/{token_id}",
        "/api/v1/clusters/{id}/scale",
        "/api/v1/tenants/{slug}/quota",
        "/api/v1/provider-kinds",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} in the OpenAPI document"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn cluster_pages_render_and_forms_work_without_javascript() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let scripts = tempfile::tempdir().unwrap();
    let script = installer(scripts.path());

    // The provider form is rendered from the kind's schema; posting it creates the provider.
    let page = app
        .get_as(&olga, "/providers?kind=command")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("name=\"s[create_command]\""),
        "schema-rendered field"
    );
    let res = olga
        .post(format!("{}/sfn/save_provider", app.url))
        .form(&[
            ("kind", "command"),
            ("name", "lab"),
            ("description", ""),
            ("s[create_command]", script.as_str()),
            ("s[shell]", "false"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/providers");
    let res = olga
        .post(format!("{}/sfn/save_template", app.url))
        .form(&[
            ("name", "small"),
            ("template_provider", "lab"),
            ("o[node_count][max]", "3"),
            ("o[node_count][default]", ""),
            ("tenants", ""),
            ("timeout_minutes", "10"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/providers");
    let bad = olga
        .post(format!("{}/sfn/save_template", app.url))
        .form(&[
            ("name", "bad"),
            ("template_provider", "lab"),
            ("overrides", "{not json"),
        ])
        .send()
        .await
        .unwrap();
    // Refused: the form comes back with the values and the error at the JSON.
    assert_eq!(bad.headers()["location"], "/providers");
    let page = app.get_as(&olga, "/providers").await.text().await.unwrap();
    assert!(
        page.contains(r#"id="template-overrides-error""#)
            && page.contains(">Is not valid JSON (line 1, column 2)</p>")
            && page.contains(r#"value="bad""#),
        "{page}"
    );
    // Members cannot reach the operators' forms.
    let res = amy
        .post(format!("{}/sfn/save_provider", app.url))
        .form(&[
            ("kind", "command"),
            ("name", "mine"),
            ("s[create_command]", "/bin/true"),
        ])
        .send()
        .await
        .unwrap();
    assert!(res.headers()["location"]
        .to_str()
        .unwrap()
        .ends_with("error=permission+denied"));

    // The member's request form shows the template's parameters with their range.
    let page = app
        .get_as(&amy, "/clusters/new?tenant=team-a&template=small")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("name=\"p[node_count]\"") && page.contains("max=\"3\""),
        "{page}"
    );
    // An invalid request comes back with the typed values (kept in the session, not in the
    // URL) and the message at its field, once.
    let res = amy
        .post(format!("{}/sfn/request_cluster", app.url))
        .form(&[
            ("tenant", "team-a"),
            ("template", "small"),
            ("name", "web"),
            ("p[node_count]", "7"),
        ])
        .send()
        .await
        .unwrap();
    let to = res.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, "/clusters/new?tenant=team-a&template=small");
    let page = app.get_as(&amy, &to).await.text().await.unwrap();
    assert!(
        page.contains(r#"id="f-node_count-error""#)
            && page.contains(">Must be at most 3</p>")
            && page.contains(r#"name="name" required"#)
            && page.contains(r#"value="web""#)
            && page.contains(r#"name="p[node_count]" value="7""#),
        "{page}"
    );
    let page = app.get_as(&amy, &to).await.text().await.unwrap();
    assert!(!page.contains("f-node_count-error"), "shown once");
    let res = amy
        .post(format!("{}/sfn/request_cluster", app.url))
        .form(&[
            ("tenant", "team-a"),
            ("template", "small"),
            ("name", "web"),
            ("p[node_count]", "2"),
        ])
        .send()
        .await
        .unwrap();
    let to = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(to.starts_with("/clusters/"), "{to}");
    let id = to.trim_start_matches("/clusters/").to_owned();
    wait_for_state(&app, &amy, &id, "ready").await;
    let page = app.get_as(&amy, &to).await.text().await.unwrap();
    assert!(
        page.contains("Ready") && page.contains("https://web.example.test:6443"),
        "cluster page"
    );
    // The download link is a plain link: a `download` attribute would make the browser save
    // the error page a failed download redirects to as a file. Success is an attachment anyway.
    let at = page
        .find("id=\"kubeconfig-download\"")
        .expect("download link");
    let tag = &page[page[..at].rfind('<').unwrap()..at + page[at..].find('>').unwrap()];
    assert!(
        !tag.replace("kubeconfig-download", "").contains("download"),
        "{tag}"
    );
    let list = app.get_as(&amy, "/clusters").await.text().await.unwrap();
    assert!(list.contains("data-cluster=\"web\""));
    // Its hydration script carries what the table shows, not the endpoint (app's
    // `clusters/listed.rs`); the cluster page above shows it. Rows are arrays, without keys.
    let data = crate::helpers::page_data(&list).concat();
    assert!(
        data.contains(r#""web""#)
            && !data.contains(r#""name":"#)
            && !data.contains("web.example.test"),
        "{data}"
    );
    // Delete through the form.
    let res = amy
        .post(format!("{}/sfn/delete_cluster", app.url))
        .form(&[("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"].to_str().unwrap(), to);
    app.stop().await;
}

pub(crate) const SA_PATH: &str = "api/v1/namespaces/kqueen-users/serviceaccounts";

/// The operator `olga` defines an `import` provider and template `import` for every tenant.
pub(crate) async fn offer_import(app: &TestApp, olga: &reqwest::Client) {
    let (status, body) = call(
        olga,
        app,
        Method::POST,
        "/api/v1/providers",
        Some(
            json!({"name": "existing", "kind": "import", "settings": {"probe_timeout_seconds": 5}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = call(
        olga,
        app,
        Method::POST,
        "/api/v1/templates",
        Some(json!({"name": "import", "provider": "existing"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
}

/// Imports the fake API server as cluster `prod` of team-a: its id, the answer to the
/// request, and the cluster once Ready.
pub(crate) async fn import_fake(
    app: &TestApp,
    who: &reqwest::Client,
    fake: &kqueen_testkit::fake_kube::FakeKube,
) -> (String, Value, Value) {
    let (status, body) = call(
        who,
        app,
        Method::POST,
        "/api/v1/clusters",
        Some(json!({
        "tenant": "team-a", "name": "prod", "template": "import",
        "parameters": {"kubeconfig": fake.admin_kubeconfig()}})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    let ready = wait_for_state(app, who, &id, "ready").await;
    (id, body, ready)
}

/// The caller's kubeconfig for cluster `id`, downloaded through the API and parsed.
pub(crate) async fn my_kubeconfig(
    app: &TestApp,
    who: &reqwest::Client,
    id: &str,
) -> kqueen_core::kubernetes::ParsedKubeconfig {
    let res = who
        .get(format!("{}/api/v1/clusters/{id}/kubeconfig", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    kqueen_core::kubernetes::parse_kubeconfig(&res.text().await.unwrap(), None, false).unwrap()
}

/// Waits (up to 10 s) until `done` holds: work the server does in the background.
pub(crate) async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen");
}

#[tokio::test]
async fn access_is_revoked_when_members_leave_or_change_role_or_the_cluster_is_forgotten() {
    use kqueen_core::kubernetes::{binding_name, probe_version, service_account_name as sa};
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let adam = app.user("adam", false, &[("team-a", "admin")]).await;
    let carl = app.user("carl", false, &[("team-a", "member")]).await;
    offer_import(&app, &olga).await;
    let (id, _, _) = import_fake(&app, &amy, &fake).await;
    let works = |k| async move { probe_version(&k, Duration::from_secs(5)).await.is_ok() };
    let (amy_k, _, carl_k) = (
        my_kubeconfig(&app, &amy, &id).await,
        my_kubeconfig(&app, &adam, &id).await,
        my_kubeconfig(&app, &carl, &id).await,
    );
    let mut all = vec![sa("adam"), sa("amy"), sa("carl")];
    all.sort();
    assert_eq!(fake.names(SA_PATH), all);

    // Removed from the tenant: amy's kubeconfig stops working now, not when its token expires.
    let (status, body) = call(
        &adam,
        &app,
        Method::DELETE,
        "/api/v1/tenants/team-a/members/amy",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    eventually("revoking amy", || !fake.names(SA_PATH).contains(&sa("amy"))).await;
    assert!(!works(amy_k).await, "a removed member's token still works");
    assert!(works(carl_k.clone()).await, "the other members keep theirs");

    // Another role: the binding to `admin` goes; a new download is bound to `edit`.
    let (status, body) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/tenants/team-a/members/adam",
        Some(json!({"role": "member"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    eventually("revoking adam", || {
        !fake.names(SA_PATH).contains(&sa("adam"))
    })
    .await;
    my_kubeconfig(&app, &adam, &id).await;
    let binding = fake
        .object(&format!(
            "apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/{}",
            binding_name(&sa("adam"))
        ))
        .unwrap();
    assert_eq!(binding["roleRef"]["name"], "edit");

    // A cluster that does not answer keeps the record; the engine's next sweep revokes.
    fake.fail(reqwest::Method::DELETE, SA_PATH, 503);
    let (status, _) = call(
        &olga,
        &app,
        Method::DELETE,
        "/api/v1/tenants/team-a/members/carl",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    eventually("trying to revoke carl", || {
        fake.count("DELETE", &format!("/{SA_PATH}/{}", sa("carl"))) > 0
    })
    .await;
    assert!(
        works(carl_k.clone()).await,
        "the cluster refused: still there"
    );
    fake.clear_failures();
    let revoked = app
        .on_server(|s| async move { s.kqueen.access_sweep().revoke_stale_access().await.unwrap() })
        .await;
    // (1, unless the engine's own sweep came first.)
    assert!(revoked <= 1, "{revoked}");
    assert!(!works(carl_k).await);
    assert_eq!(fake.names(SA_PATH), vec![sa("adam")]);

    let revokes = app
        .audit(kqueen_core::audit::AuditQuery {
            action: Some("access.revoke".into()),
            ..Default::default()
        })
        .await;
    let mut seen: Vec<_> = revokes
        .iter()
        .map(|e| (e.actor.as_str(), e.detail.as_deref().unwrap_or_default()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("system", "user adam: role changed from admin to member"),
            ("system", "user amy: no longer a member of team-a"),
            ("system", "user carl: no longer a member of team-a"),
        ]
    );

    // Deleting an imported cluster only makes KQueen forget it; what KQueen created in it
    // for its users goes first, while KQueen still can.
    let adam_k = my_kubeconfig(&app, &adam, &id).await;
    let (status, body) = call(
        &olga,
        &app,
        Method::DELETE,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    eventually("forgetting the cluster", || fake.names(SA_PATH).is_empty()).await;
    eventually("removing the users' role bindings", || {
        fake.names("apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings")
            .is_empty()
    })
    .await;
    assert!(fake
        .object(&format!(
            "apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
            binding_name(&sa("adam"))
        ))
        .is_none());
    assert!(
        !works(adam_k).await,
        "the cluster is still there, the user's access is not"
    );
    for shared in ["kqueen:cluster-reader", "kqueen:namespace-creator"] {
        assert!(
            fake.object(&format!(
                "apis/rbac.authorization.k8s.io/v1/clusterroles/{shared}"
            ))
            .is_none(),
            "{shared} is left behind"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn imported_clusters_give_members_their_own_short_lived_kubeconfig() {
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let adam = app.user("adam", false, &[("team-a", "admin")]).await;
    offer_import(&app, &olga).await;

    // Bad kubeconfigs are refused at once with a clear message.
    let exec = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://x.test'}}]\n\
        contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n\
        users: [{name: u, user: {exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}}}]\n";
    for (kubeconfig, text) in [("not: [yaml", "kubeconfig"), (exec, "exec")] {
        let (status, body) = call(&amy, &app, Method::POST, "/api/v1/clusters", Some(json!({
            "tenant": "team-a", "name": "prod", "template": "import", "parameters": {"kubeconfig": kubeconfig}}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["error"].as_str().unwrap().contains(text), "{body}");
    }
    let (id, body, ready) = import_fake(&app, &amy, &fake).await;
    // The uploaded kubeconfig is a secret: never in parameters, never in the database as text.
    assert!(body["cluster"]["parameters"].get("kubeconfig").is_none());
    assert_eq!(ready["endpoint"], fake.url());

    // The member's kubeconfig: a ServiceAccount in kqueen-users bound to `edit` in the
    // tenant's namespaces (never cluster-wide), a token.
    let res = amy
        .get(format!("{}/api/v1/clusters/{id}/kubeconfig", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let yaml = res.text().await.unwrap();
    assert!(
        yaml.contains(fake.url()) && yaml.contains("token:"),
        "{yaml}"
    );
    assert!(
        !yaml.contains(kqueen_testkit::fake_kube::ADMIN_TOKEN),
        "not the admin's credentials"
    );
    let sa = kqueen_core::kubernetes::service_account_name("amy");
    assert_eq!(fake.names(SA_PATH), vec![sa.clone()]);
    let binding = fake
        .object(&format!(
            "apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/{}",
            kqueen_core::kubernetes::binding_name(&sa)
        ))
        .unwrap();
    assert_eq!(binding["roleRef"]["name"], "edit");
    for closed in [
        "apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
        "apis/rbac.authorization.k8s.io/v1/namespaces/kqueen-users/rolebindings",
    ] {
        assert!(fake.names(closed).is_empty(), "bound in {closed}");
    }
    assert!(fake
        .object(&format!(
            "apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
            kqueen_core::kubernetes::binding_name(&sa)
        ))
        .is_none());
    // The issued kubeconfig works as is: it parses, and the fake API server accepts its token.
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(&yaml, None, false).unwrap();
    let version = kqueen_core::kubernetes::probe_version(&parsed, Duration::from_secs(5)).await;
    assert!(version.is_ok(), "{version:?}");
    let issued = app
        .audit(kqueen_core::audit::AuditQuery {
            action: Some("kubeconfig.issue".into()),
            ..Default::default()
        })
        .await;
    assert_eq!((issued.len(), issued[0].actor.as_str()), (1, "amy"));
    // The portal's link answers the same file as an attachment.
    let res = app
        .get_as(&amy, &format!("/clusters/{id}/kubeconfig"))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let disposition = res.headers()["content-disposition"].to_str().unwrap();
    assert!(
        disposition.starts_with("attachment; filename="),
        "{disposition}"
    );
    // The tenant admin gets `admin`; a member cannot revoke someone else, the admin can.
    let res = adam
        .get(format!("{}/api/v1/clusters/{id}/kubeconfig", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (status, _) = call(
        &amy,
        &app,
        Method::DELETE,
        &format!("/api/v1/clusters/{id}/access?user=adam"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &adam,
        &app,
        Method::DELETE,
        &format!("/api/v1/clusters/{id}/access?user=amy"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(
        fake.names(SA_PATH),
        vec![kqueen_core::kubernetes::service_account_name("adam")]
    );
    let version = kqueen_core::kubernetes::probe_version(&parsed, Duration::from_secs(5)).await;
    assert!(version.is_err(), "a revoked user's token stops working");

    // A cluster that cannot issue tokens says why.
    fake.fail_path(
        reqwest::Method::POST,
        &format!("/{SA_PATH}/{sa}/token"),
        404,
    );
    let (status, body) = call(
        &amy,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}/kubeconfig"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("cannot issue per-user kubeconfigs"),
        "{body}"
    );
    // Through the portal's link, the failure goes back to the cluster page with the message:
    // a redirect the browser follows and shows, not an attachment it would save.
    let res = app
        .get_as(&amy, &format!("/clusters/{id}/kubeconfig"))
        .await;
    assert!(res.status().is_redirection(), "{}", res.status());
    assert!(res.headers().get("content-disposition").is_none());
    let to = res.headers()["location"].to_str().unwrap();
    assert!(
        to.starts_with(&format!("/clusters/{id}?error=")) && to.contains("per-user"),
        "{to}"
    );
    app.stop().await;
}
