//! The fleet inventory over /api/v1: a member imports a cluster (the fake API server with a
//! node and a pod), syncs it on demand, reads its inventory; the fleet queries answer JSON
//! pages, CSV and JSON downloads, refuse bad filters, and show each tenant only its own.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, wait_for_state};
use crate::helpers::TestApp;

const DIGEST: &str = "sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac";

#[tokio::test]
async fn members_sync_clusters_and_query_the_fleet_through_the_api() {
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    fake.insert(
        "api/v1/nodes",
        json!({"metadata": {"name": "node-1"}, "status": {
            "capacity": {"cpu": "2", "memory": "4Gi"}, "allocatable": {"cpu": "2", "memory": "4Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "containerRuntimeVersion": "containerd://2.0.0",
                         "osImage": "Debian", "kernelVersion": "6.1", "architecture": "amd64"}}}),
    );
    fake.insert("api/v1/namespaces", json!({"metadata": {"name": "web"}}));
    fake.insert(
        "api/v1/namespaces/web/pods",
        json!({"metadata": {"name": "front"}, "spec": {"nodeName": "node-1",
                "containers": [{"name": "nginx", "image": "nginx:1.27",
                                "securityContext": {"privileged": true},
                                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
               "status": {"phase": "Running", "containerStatuses": [{"name": "nginx",
                "image": "nginx:1.27", "imageID": format!("docker.io/library/nginx@{DIGEST}"),
                "restartCount": 0, "ready": true}]}}),
    );
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let adam = app.user("adam", false, &[("team-a", "admin")]).await;
    let bea = app.user("bea", false, &[("team-b", "member")]).await;
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
        let (status, body) = call(&olga, &app, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(
            json!({"tenant": "team-a", "name": "prod", "template": "import",
                    "parameters": {"kubeconfig": fake.admin_kubeconfig()}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &amy, &id, "ready").await;

    // The first sync starts on its own once the cluster is Ready (core/tests/first_sync.rs), so
    // whether it has finished yet is a race: only the answer's shape is checked here.
    let inventory = format!("/api/v1/clusters/{id}/inventory");
    let (status, body) = call(&amy, &app, Method::GET, &inventory, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.get("sync").is_some(), "{body}");

    // Another tenant can neither sync nor read it; the member can.
    let sync = format!("{inventory}/sync");
    for (method, path) in [(Method::POST, &sync), (Method::GET, &inventory)] {
        let (status, _) = call(&bea, &app, method, path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, body) = call(&amy, &app, Method::POST, &sync, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["error"], Value::Null, "{body}");
    let (_, body) = call(&amy, &app, Method::GET, &inventory, None).await;
    assert_eq!(
        body["sync"]["api_version"]
            .as_str()
            .map(|v| v.starts_with("v1.")),
        Some(true)
    );
    assert_eq!(body["nodes"][0]["name"], "node-1");
    assert_eq!(body["nodes"][0]["requested"]["cpu_millis"], 500);
    assert_eq!(body["workloads"][0]["kind"], "Pod");
    assert_eq!(
        body["pods"],
        json!([{"namespace": "web", "phase": "Running", "count": 1}])
    );
    // One finding (the privileged container), so that "other tenants see none" means something.
    assert_eq!(body["findings"][0]["check"], "privileged", "{body}");

    // Which clusters run nginx: JSON page, CSV and JSON downloads.
    let (status, body) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/fleet/images?q=nginx",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 1);
    let image = &body["items"][0];
    assert_eq!(
        image["image"],
        format!("docker.io/library/nginx:1.27@{DIGEST}")
    );
    assert_eq!(image["usages"][0]["cluster"], "prod");
    assert_eq!(image["usages"][0]["namespace"], "web");
    assert_eq!(image["usages"][0]["workload_name"], "front");
    let res = amy
        .get(format!("{}/api/v1/fleet/images?format=csv", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert!(res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("attachment"));
    let csv = res.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("image,registry,repository,tag,digest,tenant,cluster"));
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[1].contains(",team-a,prod,web,Pod,front,nginx,1,"),
        "{csv}"
    );
    let res = amy
        .get(format!("{}/api/v1/fleet/versions?download=true", app.url))
        .send()
        .await
        .unwrap();
    assert!(res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("kqueen-versions.json"));
    let versions: Value = res.json().await.unwrap();
    assert_eq!(versions["items"][0]["kubelet_version"], "v1.33.1");

    // Since when the cluster runs the image: the image history.
    let (status, body) = call(
        &amy,
        &app,
        Method::GET,
        "/api/v1/fleet/images/history?q=nginx&cluster=prod",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 1, "{body}");
    let h = &body["items"][0];
    assert_eq!(
        (h["cluster"].as_str(), h["tenant"].as_str()),
        (Some("prod"), Some("team-a"))
    );
    assert_eq!(h["digest"], DIGEST);
    assert_eq!(h["present"], true);
    assert!(h["first_seen"].as_str().is_some() && h["last_seen"].as_str().is_some());
    let res = amy
        .get(format!(
            "{}/api/v1/fleet/images/history?format=csv",
            app.url
        ))
        .send()
        .await
        .unwrap();
    let csv = res.text().await.unwrap();
    assert!(
        csv.starts_with("tenant,cluster,image,digest,first_seen,last_seen,present"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("team-a,prod,docker.io/library/nginx:1.27@"),
        "{csv}"
    );

    // Other tenants see nothing of it; bad filters are 400 with a message.
    for path in [
        "/api/v1/fleet/images",
        "/api/v1/fleet/images/history",
        "/api/v1/fleet/versions",
        "/api/v1/fleet/findings",
    ] {
        let (status, body) = call(&amy, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(body["total"], 1, "{path}: the tenant's own: {body}");
        let (status, body) = call(&bea, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(body["total"], 0, "{path}: {body}");
        let res = bea
            .get(format!("{}{path}?format=csv", app.url))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.text().await.unwrap().lines().count(),
            1,
            "{path}: header only"
        );
    }
    for (path, field) in [
        ("/api/v1/fleet/findings?severity=urgent", "severity"),
        ("/api/v1/fleet/images?format=xml", "format"),
    ] {
        let (status, body) = call(&amy, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
        assert!(body["error"].as_str().unwrap().contains(field), "{body}");
    }

    // The dashboard: operators and tenant admins; members are refused.
    let (status, body) = call(&olga, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["clusters"], 1);
    assert_eq!(body["nodes_ready"], 1);
    assert_eq!(body["by_version"], json!([{"label": "1.33", "count": 1}]));
    // What runs and what is offered, each said as such: no template offers a version yet.
    assert_eq!(body["newest_running"], "v1.33.2", "{body}");
    assert_eq!(body["newest_offered"], Value::Null, "{body}");
    let behind = |body: &Value| body["attention"].to_string().contains("behind");
    assert!(!behind(&body), "{body}");
    // A template offering 1.34: the cluster is behind the newest offered, and says so.
    for (path, body) in [
        (
            "/api/v1/providers",
            json!({"name": "installer", "kind": "command",
                   "settings": {"create_command": "/bin/true"}}),
        ),
        (
            "/api/v1/templates",
            json!({"name": "current", "provider": "installer",
                   "overrides": {"kubernetes_version": {"options": ["1.33", "1.34"]}}}),
        ),
    ] {
        let (status, body) = call(&olga, &app, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (_, body) = call(&olga, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(
        (
            body["newest_running"].as_str(),
            body["newest_offered"].as_str()
        ),
        (Some("v1.33.2"), Some("1.34")),
        "{body}"
    );
    assert_eq!(
        body["attention"][0]["reasons"],
        json!(["Kubernetes 1.33 is behind 1.34, the newest offered"]),
        "{body}"
    );
    // One page of the clusters, each with its reasons; the attention count and its pages.
    assert_eq!(
        (&body["attention_total"], &body["total"], &body["limit"]),
        (&json!(1), &json!(1), &json!(50)),
        "{body}"
    );
    assert_eq!(body["items"][0]["reasons"], body["attention"][0]["reasons"]);
    // (query, Some((total, items on the page)), or None: refused)
    for (query, expected) in [
        ("?attention=true&limit=1", Some((1, 1))),
        ("?attention=true&offset=1", Some((1, 0))),
        ("?offset=1", Some((1, 0))),
        ("?tenant=nobody-here&attention=true", Some((0, 0))),
        ("?attention=maybe", None),
        ("?limit=-1", None),
        ("?offset=x", None),
    ] {
        let path = format!("/api/v1/fleet{query}");
        let (status, body) = call(&olga, &app, Method::GET, &path, None).await;
        let Some((total, items)) = expected else {
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
            continue;
        };
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        assert_eq!(
            (
                body["total"].as_u64(),
                body["items"].as_array().map(Vec::len)
            ),
            (Some(total), Some(items)),
            "{query}: {body}"
        );
    }
    let (status, body) = call(&adam, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(
        (status, body["clusters"].clone()),
        (StatusCode::OK, json!(1))
    );
    let (status, _) = call(&amy, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let anonymous = app.browser();
    let (status, _) = call(&anonymous, &app, Method::GET, "/api/v1/fleet/images", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The pages' server functions and the Sync now form answer the same way.
    let sfn = |who: &reqwest::Client, endpoint: &str, form: Vec<(&str, String)>| {
        let req = who.post(format!("{}/sfn/{endpoint}", app.url)).form(&form);
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    assert!(sfn(&amy, "fleet", vec![]).await.contains("Forbidden"));
    assert!(sfn(&bea, "fleet", vec![]).await.contains("Forbidden"));
    let dashboard: Value = serde_json::from_str(&sfn(&adam, "fleet", vec![]).await).unwrap();
    assert_eq!(dashboard["clusters"], 1, "{dashboard}");
    assert_eq!(
        (&dashboard["newest_running"], &dashboard["newest_offered"]),
        (&json!("v1.33.2"), &json!("1.34")),
        "{dashboard}"
    );
    assert!(dashboard["cpu_chart"].as_str().unwrap().starts_with("<svg"));
    for (who, rows) in [(&amy, 1u64), (&bea, 0)] {
        for (endpoint, q) in [
            ("fleet_images", "nginx"),
            ("fleet_image_history", "nginx"),
            ("fleet_versions", "v1.33"),
        ] {
            let form = vec![("query[q]", q.to_owned())];
            let page: Value = serde_json::from_str(&sfn(who, endpoint, form).await).unwrap();
            assert_eq!(page["total"], rows, "{endpoint}: {page}");
        }
        let form = vec![("query[q]", String::new())];
        let page: Value = serde_json::from_str(&sfn(who, "fleet_findings", form).await).unwrap();
        assert_eq!(page["list"]["total"], rows, "{page}");
    }
    let bad = sfn(
        &amy,
        "fleet_findings",
        vec![("query[severity]", "urgent".into())],
    )
    .await;
    assert!(bad.contains("severity"), "{bad}");
    let page = sfn(&bea, "cluster", vec![("id", id.clone())]).await;
    assert!(page.contains("NotFound"), "{page}");
    let page: Value =
        serde_json::from_str(&sfn(&amy, "cluster", vec![("id", id.clone())]).await).unwrap();
    assert_eq!(page["inventory"]["nodes"][0]["name"], "node-1", "{page}");
    assert!(page["inventory"]["cpu_chart"]
        .as_str()
        .unwrap()
        .contains("CPU per node"));
    let form = format!("{}/sfn/sync_inventory", app.url);
    for (who, to) in [
        (&bea, format!("/clusters/{id}?error=cluster+not+found")),
        (&anonymous, format!("/login?next=%2Fclusters%2F{id}")),
        (&amy, format!("/clusters/{id}")),
    ] {
        let res = who
            .post(&form)
            .form(&[("id", id.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["location"].to_str().unwrap(), to);
    }

    // The portal: members reach the fleet queries from the main navigation (the dashboard
    // would refuse them) and are offered no Dashboard tab; tenant admins are.
    let page = |who: &reqwest::Client, path: &str| {
        let req = who.get(format!("{}{path}", app.url));
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    let html = page(&amy, "/fleet/images/history?q=nginx").await;
    assert!(html.contains(r#"id="image-history""#), "{html}");
    assert!(
        html.contains(r#"<a href="/fleet/images" aria-current="page">Fleet</a>"#),
        "{html}"
    );
    assert!(!html.contains(r#"<a href="/fleet">Fleet</a>"#), "{html}");
    assert!(!html.contains(">Dashboard</a>"), "{html}");
    assert!(html.contains("kqueen-images-history.csv"), "{html}");
    // The dashboard says what runs and what is offered, never "unknown".
    let html = page(&adam, "/fleet").await;
    let stat = |id: &str| {
        let at = html.find(&format!(r#"id="{id}""#)).expect(id);
        html[at..].chars().take(300).collect::<String>()
    };
    assert!(stat("newest-running").contains("v1.33.2"), "{html}");
    assert!(stat("newest-offered").contains("1.34"), "{html}");
    assert!(html.contains("clusters behind it need attention"), "{html}");
    assert!(
        html.contains("is behind 1.34, the newest offered"),
        "{html}"
    );
    // Charts are drawn into the HTML once: the script handing the page's data to the browser
    // carries the data (the version) but not the charts again.
    let scripts = crate::helpers::page_data(&html).concat();
    assert!(html.contains("-title\">CPU of the fleet</title>"), "{html}");
    assert!(scripts.contains("v1.33.2"), "{scripts}");
    assert!(!scripts.contains("CPU of the fleet"), "{scripts}");
    let html = page(&amy, &format!("/clusters/{id}")).await;
    let scripts = crate::helpers::page_data(&html).concat();
    assert!(html.contains("-title\">CPU per node"), "{html}");
    assert!(scripts.contains("node-1"), "{scripts}");
    assert!(!scripts.contains("CPU per node"), "{scripts}");
    let html = page(&adam, "/fleet/images/history").await;
    assert!(html.contains(">Dashboard</a>"), "{html}");
    assert!(
        html.contains(r#"<a href="/fleet" aria-current="page">Fleet</a>"#),
        "{html}"
    );

    // All of it is in the OpenAPI document.
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    for (path, method) in [
        ("/api/v1/fleet", "get"),
        ("/api/v1/fleet/images", "get"),
        ("/api/v1/fleet/images/history", "get"),
        ("/api/v1/fleet/versions", "get"),
        ("/api/v1/fleet/findings", "get"),
        ("/api/v1/clusters/{id}/inventory", "get"),
        ("/api/v1/clusters/{id}/inventory/sync", "post"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    app.stop().await;
}
