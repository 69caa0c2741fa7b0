//! Addons over /api/v1 against a real kube-apiserver (kqueen_testkit's, without the Deployment
//! and ReplicaSet controllers: the test plays them by patching a Deployment's status),
//! imported as a cluster through the API, with the engine of the test server running the
//! operations: an operator defines an addon, a member switches it on (202), follows it to
//! `healthy`, an operator defines a newer version and moves the fleet to it, the member
//! switches it off. Other tenants get 404, members 403 on the catalog's and the fleet's
//! writes, anonymous callers 401; invalid input gets a 400 naming the field, never a 5xx.
//! The OpenAPI document lists the nine operations.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, offer_import};
use crate::helpers::TestApp;
use crate::real_cluster::{message, world, World};

const BUILTINS: [&str; 4] = [
    "cert-manager",
    "ingress-nginx",
    "kubernetes-dashboard",
    "metrics-server",
];

/// A small addon: a Namespace, a ConfigMap and a Deployment with `${replicas}` (an integer
/// from 1 to 3), healthy when the Deployment is available.
fn demo(version: &str) -> Value {
    json!({
        "name": "demo",
        "version": version,
        "description": "A demo addon",
        "namespace": "demo-system",
        "parameters": [{"name": "replicas", "type": "integer", "default": "1",
                        "description": "Pods", "min": 1, "max": 3}],
        "health": {"workloads": [{"kind": "Deployment", "namespace": "demo-system", "name": "demo"}]},
        "manifests": format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo-system\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-settings\ndata:\n  \
             level: info\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\nspec:\n  \
             replicas: ${{replicas}}\n  selector:\n    matchLabels: {{app: demo}}\n  template:\n    \
             metadata:\n      labels: {{app: demo}}\n    spec:\n      containers:\n      \
             - name: demo\n        image: registry.k8s.io/pause:{version}\n"
        ),
    })
}

impl World {
    fn addons(&self) -> String {
        format!("/api/v1/clusters/{}/addons", self.cluster)
    }

    /// The cluster's addons as amy sees them.
    async fn list_addons(&self) -> Vec<Value> {
        let (status, body) = call(&self.amy, &self.app, Method::GET, &self.addons(), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body.as_array().unwrap().clone()
    }

    async fn addon(&self, name: &str) -> Value {
        self.list_addons()
            .await
            .into_iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("{name} in the cluster's addons"))
    }

    /// Polls the cluster (up to 60 s) until the operation `op` has succeeded.
    async fn wait_for_operation(&self, op: &str) {
        let path = format!("/api/v1/clusters/{}", self.cluster);
        let mut last = Value::Null;
        for _ in 0..600 {
            let (status, body) = call(&self.amy, &self.app, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let found = body["operations"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["id"] == op)
                .cloned()
                .unwrap_or(Value::Null);
            match found["state"].as_str() {
                Some("succeeded") => return,
                Some("failed") => panic!("operation {op} failed: {found}"),
                _ => {}
            }
            last = found;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("operation {op} never succeeded: {last}");
    }
}

/// A 400 whose message starts with the field it names.
fn assert_invalid(what: &str, status: StatusCode, body: &Value, field: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
    let m = message(status, body);
    assert!(m.starts_with(field), "{what}: {m:?} names {field}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_define_addons_members_switch_them_on_and_the_fleet_upgrades() {
    let Some(w) = world().await else { return };
    let addons = w.addons();

    // The catalog: operators define, members may not.
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("1.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        (&body["name"], &body["builtin"]),
        (&json!("demo"), &json!(false))
    );
    let (status, body) = call(
        &w.amy,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("9.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    message(status, &body);
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("1.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "defined twice: {body}");
    let (status, catalog) = call(&w.amy, &w.app, Method::GET, "/api/v1/addons", None).await;
    assert_eq!(status, StatusCode::OK, "{catalog}");
    let catalog = catalog.as_array().unwrap();
    assert!(
        catalog.iter().all(|d| d["manifests"] == ""),
        "listings leave manifests out"
    );
    for name in BUILTINS {
        assert!(
            catalog
                .iter()
                .any(|d| d["name"] == name && d["builtin"] == true),
            "{name}"
        );
    }
    let (status, one) = call(
        &w.amy,
        &w.app,
        Method::GET,
        "/api/v1/addons/demo/1.0.0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["manifests"], demo("1.0.0")["manifests"]);
    assert_eq!(one["parameters"][0]["type"], "integer");
    let (status, _) = call(&w.amy, &w.app, Method::GET, "/api/v1/addons/demo/7.0", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The cluster's addons: the four built-ins and demo, none installed.
    let list = w.list_addons().await;
    let names: Vec<&str> = list.iter().filter_map(|a| a["name"].as_str()).collect();
    for name in BUILTINS.iter().chain(&["demo"]) {
        assert!(names.contains(name), "{name} in {names:?}");
    }
    let demo_now = w.addon("demo").await;
    assert_eq!(demo_now["state"], "not_installed", "{demo_now}");
    assert_eq!(demo_now["versions"], json!(["1.0.0"]));
    assert_eq!(demo_now["parameter_specs"][0]["name"], "replicas");

    // On: 202 with the operation; the engine of the test server applies it.
    let (status, op) = call(
        &w.amy,
        &w.app,
        Method::PUT,
        &format!("{addons}/demo"),
        Some(json!({"parameters": {"replicas": "2"}})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{op}");
    assert_eq!(
        (&op["kind"], &op["target"]),
        (&json!("addon-apply"), &json!("demo"))
    );
    w.wait_for_operation(op["id"].as_str().unwrap()).await;
    // Applied, but no kubelet runs its pods: installing, and the reason says which workload.
    let v = w.addon("demo").await;
    assert_eq!(v["state"], "installing", "{v}");
    assert_eq!(v["version"], "1.0.0");
    assert_eq!(v["parameters"], json!({"replicas": "2"}));
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("Deployment demo-system/demo: 0/2"),
        "{v}"
    );

    // The Deployment's controller reports it available: healthy.
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(w.admin_client().await, "demo-system");
    let generation = deployments.get("demo").await.unwrap().metadata.generation;
    deployments
        .patch_status(
            "demo",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"observedGeneration": generation,
                "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}})),
        )
        .await
        .unwrap();
    let v = w.addon("demo").await;
    assert_eq!(v["state"], "healthy", "{v}");
    assert_eq!(v["reason"], Value::Null);

    // A newer version: offered as an upgrade, in the cluster and in the fleet.
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("1.1.0")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let v = w.addon("demo").await;
    assert_eq!(v["upgrade_available"], "1.1.0", "{v}");
    assert_eq!(v["versions"], json!(["1.1.0", "1.0.0"]));
    let fleet_row = |rows: &Value| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["addon"] == "demo")
            .cloned()
    };
    for who in [&w.olga, &w.tim] {
        let (status, rows) = call(who, &w.app, Method::GET, "/api/v1/fleet/addons", None).await;
        assert_eq!(status, StatusCode::OK, "{rows}");
        let row = fleet_row(&rows).unwrap_or_else(|| panic!("demo in {rows}"));
        assert_eq!(
            (
                &row["cluster_id"],
                &row["cluster"],
                &row["tenant"],
                &row["version"],
                &row["state"],
                &row["upgrade_available"]
            ),
            (
                &json!(w.cluster),
                &json!("prod"),
                &json!("team-a"),
                &json!("1.0.0"),
                &json!("installed"),
                &json!("1.1.0")
            ),
            "{row}"
        );
    }
    for who in [&w.amy, &w.bea] {
        let (status, body) = call(who, &w.app, Method::GET, "/api/v1/fleet/addons", None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "members: {body}");
        message(status, &body);
    }

    // The bulk upgrade: operators only; one result per cluster.
    let upgrade = json!({"addon": "demo", "version": "1.1.0", "clusters": []});
    for who in [&w.amy, &w.tim] {
        let (status, body) = call(
            who,
            &w.app,
            Method::POST,
            "/api/v1/fleet/addons/upgrade",
            Some(upgrade.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        message(status, &body);
    }
    let (status, done) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/fleet/addons/upgrade",
        Some(upgrade),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    let done = done.as_array().unwrap();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["cluster_id"], w.cluster.as_str());
    assert_eq!(done[0]["cluster"], "prod");
    assert_eq!(done[0]["error"], Value::Null, "{done:?}");
    w.wait_for_operation(done[0]["operation"].as_str().unwrap())
        .await;
    let v = w.addon("demo").await;
    assert_eq!(v["version"], "1.1.0", "{v}");
    assert_eq!(v["parameters"], json!({"replicas": "2"}), "parameters kept");
    assert_eq!(v["upgrade_available"], Value::Null);
    let image = deployments
        .get("demo")
        .await
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("registry.k8s.io/pause:1.1.0"));

    // The catalog keeps what a cluster runs; the rest may go (operators only).
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::DELETE,
        "/api/v1/addons/demo/1.1.0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    message(status, &body);
    let (status, body) = call(
        &w.amy,
        &w.app,
        Method::DELETE,
        "/api/v1/addons/demo/1.0.0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::DELETE,
        "/api/v1/addons/demo/1.0.0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, _) = call(
        &w.amy,
        &w.app,
        Method::GET,
        "/api/v1/addons/demo/1.0.0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Another tenant's member learns nothing about the cluster, an anonymous caller even less.
    let anonymous = reqwest::Client::new();
    let install = json!({"parameters": {"replicas": "3"}});
    let cluster_calls: [(Method, String, Option<Value>); 3] = [
        (Method::GET, addons.clone(), None),
        (Method::PUT, format!("{addons}/demo"), Some(install.clone())),
        (Method::DELETE, format!("{addons}/demo"), None),
    ];
    for (method, path, body) in &cluster_calls {
        let (status, answer) = call(&w.bea, &w.app, method.clone(), path, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "bea: {method} {path}: {answer}"
        );
        message(status, &answer);
    }
    let catalog_calls: [(Method, String, Option<Value>); 6] = [
        (Method::GET, "/api/v1/addons".into(), None),
        (Method::POST, "/api/v1/addons".into(), Some(demo("2.0.0"))),
        (Method::GET, "/api/v1/addons/demo/1.1.0".into(), None),
        (Method::DELETE, "/api/v1/addons/demo/1.1.0".into(), None),
        (Method::GET, "/api/v1/fleet/addons".into(), None),
        (
            Method::POST,
            "/api/v1/fleet/addons/upgrade".into(),
            Some(json!({"addon": "demo", "version": "1.1.0"})),
        ),
    ];
    for (method, path, body) in cluster_calls.iter().chain(&catalog_calls) {
        let (status, answer) = call(&anonymous, &w.app, method.clone(), path, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "anonymous: {method} {path}"
        );
        message(status, &answer);
    }
    assert_eq!(
        w.addon("demo").await["parameters"],
        json!({"replicas": "2"})
    );

    // Off: 202 with the operation, then not installed, and its Deployment gone.
    let (status, op) = call(
        &w.amy,
        &w.app,
        Method::DELETE,
        &format!("{addons}/demo"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{op}");
    assert_eq!(
        (&op["kind"], &op["target"]),
        (&json!("addon-remove"), &json!("demo"))
    );
    w.wait_for_operation(op["id"].as_str().unwrap()).await;
    let v = w.addon("demo").await;
    assert_eq!(v["state"], "not_installed", "{v}");
    assert_eq!(v["version"], Value::Null);
    assert!(deployments.get_opt("demo").await.unwrap().is_none());
    let (status, body) = call(
        &w.amy,
        &w.app,
        Method::DELETE,
        &format!("{addons}/demo"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "removed twice: {body}");
    w.app.stop().await;
}

/// A YAML bomb: nine levels of aliases, each repeating the one before nine times.
fn billion_laughs() -> String {
    let mut m = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (i, c) in ('b'..='j').enumerate() {
        let prev = char::from(b'a' + u8::try_from(i).unwrap());
        m.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_definitions_and_installs_get_a_400_naming_the_field() {
    let Some(w) = world().await else { return };
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("1.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Definitions.
    let with = |patch: Value| {
        let mut d = demo("2.0.0");
        for (k, v) in patch.as_object().unwrap() {
            d[k] = v.clone();
        }
        d
    };
    let cases = [
        ("bad name", with(json!({"name": "Demo_X"})), "name"),
        ("empty name", with(json!({"name": ""})), "name"),
        (
            "bad namespace",
            with(json!({"namespace": "Kube System"})),
            "namespace",
        ),
        ("bad version", with(json!({"version": "1 0"})), "version"),
        (
            "undeclared placeholder",
            with(json!({"manifests":
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: ${x}\n"})),
            "manifests",
        ),
        (
            "YAML bomb",
            with(json!({"manifests": billion_laughs()})),
            "manifests",
        ),
        (
            "1000-deep nesting",
            with(json!({"manifests": "[".repeat(1000) + &"]".repeat(1000)})),
            "manifests",
        ),
        ("no object", with(json!({"manifests": ""})), "manifests"),
        (
            "unknown parameter type",
            with(json!({"parameters": [{"name": "n", "type": "float", "default": "1"}]})),
            "parameters",
        ),
        (
            "default out of range",
            with(
                json!({"parameters": [{"name": "replicas", "type": "integer", "default": "9",
                "min": 1, "max": 3}]}),
            ),
            "parameters",
        ),
        (
            "health rule on a Pod",
            with(
                json!({"health": {"workloads": [{"kind": "Pod", "namespace": "a", "name": "b"}]}}),
            ),
            "health",
        ),
    ];
    for (what, def, field) in cases {
        let (status, body) = call(&w.olga, &w.app, Method::POST, "/api/v1/addons", Some(def)).await;
        assert_invalid(what, status, &body, field);
    }
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/addons",
        Some(json!({"name": "demo", "version": "2.0.0"})),
    )
    .await;
    assert_invalid("missing namespace", status, &body, "namespace");

    // Installs.
    let install = format!("{}/demo", w.addons());
    let cases = [
        (
            "unknown parameter",
            json!({"parameters": {"replicaz": "2"}}),
            "parameters",
        ),
        (
            "out-of-range integer",
            json!({"parameters": {"replicas": "99"}}),
            "parameters",
        ),
        (
            "not an integer",
            json!({"parameters": {"replicas": "two"}}),
            "parameters",
        ),
        ("unknown version", json!({"version": "7.0"}), "version"),
        (
            "parameters not text",
            json!({"parameters": {"replicas": 2}}),
            "parameters",
        ),
    ];
    for (what, body, field) in cases {
        let (status, answer) = call(&w.amy, &w.app, Method::PUT, &install, Some(body)).await;
        assert_invalid(what, status, &answer, field);
    }
    let (status, body) = call(
        &w.amy,
        &w.app,
        Method::PUT,
        &format!("{}/nope", w.addons()),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "unknown addon: {body}");
    let (status, body) = call(
        &w.amy,
        &w.app,
        Method::PUT,
        "/api/v1/clusters/not-a-uuid/addons/demo",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "unknown cluster: {body}");

    // Bulk upgrades.
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/fleet/addons/upgrade",
        Some(json!({"addon": "demo", "version": "7.0"})),
    )
    .await;
    assert_invalid("unknown version", status, &body, "version");
    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::POST,
        "/api/v1/fleet/addons/upgrade",
        Some(json!({"addon": "demo", "version": "1.0.0", "clusters": ["not-a-uuid"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body[0]["error"].is_string(), "{body}");

    // Nothing was queued, and the server is up.
    assert_eq!(w.addon("demo").await["state"], "not_installed");
    assert_eq!(w.app.get("/healthz").await.status(), StatusCode::OK);
    w.app.stop().await;
}

/// The fake Kubernetes API of `make api-fuzz` (and of most API tests) cannot apply server-side:
/// against it every addon endpoint answers, never with a 5xx.
#[tokio::test]
async fn a_cluster_that_cannot_apply_gets_answers_not_server_errors() {
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[("team-a", "admin")]).await;
    offer_import(&app, &olga).await;
    let (id, _, _) = crate::clusters::import_fake(&app, &olga, &fake).await;
    let addons = format!("/api/v1/clusters/{id}/addons");
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/addons",
        Some(demo("1.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let calls: [(Method, String, Option<Value>); 6] = [
        (Method::GET, addons.clone(), None),
        (Method::PUT, format!("{addons}/demo"), Some(json!({}))),
        (
            Method::PUT,
            format!("{addons}/metrics-server"),
            Some(json!({})),
        ),
        (Method::DELETE, format!("{addons}/demo"), None),
        (Method::GET, "/api/v1/fleet/addons".into(), None),
        (
            Method::POST,
            "/api/v1/fleet/addons/upgrade".into(),
            Some(json!({"addon": "demo", "version": "1.0.0", "clusters": [id]})),
        ),
    ];
    for (method, path, body) in calls {
        let (status, answer) = call(&olga, &app, method.clone(), &path, body).await;
        assert!(
            status.is_success() || status.is_client_error(),
            "{method} {path}: {status} {answer}"
        );
        if status.is_client_error() {
            message(status, &answer);
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn the_document_lists_the_addon_operations() {
    let app = TestApp::sqlite().await;
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let paths = &doc["paths"];
    let schema_ref = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let array_of = |name: &str| json!({"type": "array", "items": schema_ref(name)});
    let answer = |path: &str, method: &str, status: &str| {
        let op = &paths[path][method];
        assert_eq!(op["tags"], json!(["addons"]), "{method} {path}: {op}");
        op["responses"][status]["content"]["application/json"]["schema"].clone()
    };
    let catalog = "/api/v1/addons";
    let version = "/api/v1/addons/{name}/{version}";
    let cluster = "/api/v1/clusters/{id}/addons";
    let one = "/api/v1/clusters/{id}/addons/{name}";
    let fleet = "/api/v1/fleet/addons";
    let upgrade = "/api/v1/fleet/addons/upgrade";
    assert_eq!(answer(catalog, "get", "200"), array_of("AddonDefinition"));
    assert_eq!(
        answer(catalog, "post", "201"),
        schema_ref("AddonDefinition")
    );
    assert_eq!(answer(version, "get", "200"), schema_ref("AddonDefinition"));
    assert!(paths[version]["delete"]["responses"]["204"].is_object());
    assert_eq!(answer(version, "delete", "409"), schema_ref("ErrorOut"));
    assert_eq!(answer(cluster, "get", "200"), array_of("ClusterAddon"));
    assert_eq!(answer(one, "put", "202"), schema_ref("Operation"));
    assert_eq!(answer(one, "delete", "202"), schema_ref("Operation"));
    assert_eq!(answer(fleet, "get", "200"), array_of("FleetAddon"));
    assert_eq!(answer(upgrade, "post", "200"), array_of("BulkResult"));
    for (path, method, body) in [
        (catalog, "post", "AddonDefinition"),
        (one, "put", "AddonInstall"),
        (upgrade, "post", "BulkUpgrade"),
    ] {
        assert_eq!(
            paths[path][method]["requestBody"]["content"]["application/json"]["schema"],
            schema_ref(body),
            "{method} {path}"
        );
        for status in ["400", "401", "403", "413", "415"] {
            assert!(
                paths[path][method]["responses"][status].is_object(),
                "{method} {path} {status}"
            );
        }
    }
    let schemas = &doc["components"]["schemas"];
    for name in [
        "AddonDefinition",
        "AddonParam",
        "HealthRule",
        "WellKnown",
        "ClusterAddon",
        "AddonInstall",
        "FleetAddon",
        "BulkUpgrade",
        "BulkResult",
    ] {
        assert!(schemas[name].is_object(), "schema {name}");
    }
    assert!(doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "addons"));
    app.stop().await;
}
