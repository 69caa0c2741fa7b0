//! Applications over /api/v1 against a real kube-apiserver (kqueen_testkit's, without the
//! Deployment and ReplicaSet controllers: the test plays them by patching a Deployment's
//! status), imported as a cluster through the API, with the engine of the test server
//! running the deploys: preview, deploy, status, a second version beside the first, the
//! re-deploy's diff and prune, delete; other tenants get 404, anonymous callers 401; a 1 MiB
//! manifest passes and larger ones are refused cleanly; hostile manifests (a property test)
//! always get a 4xx in the API's error shape. The OpenAPI document lists the five operations.

use std::time::Duration;

use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, offer_import};
use crate::helpers::TestApp;
use crate::real_cluster::{message, world, World};

fn shop(replicas: u32, with_settings: bool) -> String {
    let settings = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  \
                    color: blue\n---\n";
    format!(
        "{}apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    \
         app: web\n  ports:\n  - port: 80\n---\napiVersion: apps/v1\nkind: Deployment\n\
         metadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      \
         app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      \
         containers:\n      - name: web\n        image: nginx:1.27\n",
        if with_settings { settings } else { "" }
    )
}

fn deploy_body(version: &str, manifests: &str) -> Value {
    json!({"name": "shop", "version": version, "manifests": manifests})
}

impl World {
    fn apps(&self) -> String {
        format!("/api/v1/clusters/{}/apps", self.cluster)
    }

    /// Deploys `body` as amy (202) and waits until the version is `deployed`: its id.
    async fn deploy(&self, body: Value) -> String {
        let (status, accepted) =
            call(&self.amy, &self.app, Method::POST, &self.apps(), Some(body)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        assert_eq!(accepted["application"]["state"], "deploying", "{accepted}");
        assert_eq!(accepted["operation"]["kind"], "app-deploy", "{accepted}");
        let id = accepted["application"]["id"].as_str().unwrap().to_owned();
        assert_eq!(accepted["operation"]["target"], id.as_str());
        let status = self.wait_for_app(&id, "deployed").await;
        assert_eq!(status["application"]["error"], Value::Null);
        id
    }

    /// Polls the version's status (up to 60 s) until its state is `want`.
    async fn wait_for_app(&self, id: &str, want: &str) -> Value {
        let path = format!("{}/{id}", self.apps());
        let mut last = Value::Null;
        for _ in 0..600 {
            let (status, body) = call(&self.amy, &self.app, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let state = body["application"]["state"].as_str().unwrap_or_default();
            if state == want {
                return body;
            }
            assert_ne!(state, "failed", "{body}");
            last = body;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("version {id} never became {want}: {last}");
    }

    async fn list_apps(&self) -> Vec<Value> {
        let (status, body) = call(&self.amy, &self.app, Method::GET, &self.apps(), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body.as_array().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_preview_deploy_follow_and_remove_versions_through_the_api() {
    let Some(w) = world().await else { return };
    let apps = w.apps();

    // The dry run of a first version: its namespace does not exist yet, everything is new.
    let (status, preview) = call(
        &w.amy,
        &w.app,
        Method::POST,
        &format!("{apps}/preview"),
        Some(deploy_body("1.0", &shop(1, true))),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["namespace"], "shop-1-0");
    assert_eq!(preview["namespace_exists"], false);
    assert!(
        preview["applied_as"].as_str().unwrap().contains("amy"),
        "{preview}"
    );
    let objects = preview["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 3, "{preview}");
    assert!(
        objects.iter().all(|o| o["change"] == "created"),
        "{preview}"
    );
    assert!(w.list_apps().await.is_empty(), "a preview changes nothing");

    // Deploy 1.0; the engine of the test server runs it.
    let v1 = w.deploy(deploy_body("1.0", &shop(1, true))).await;
    let (_, status) = call(&w.amy, &w.app, Method::GET, &format!("{apps}/{v1}"), None).await;
    let workloads = status["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 1, "{status}");
    assert_eq!(workloads[0]["kind"], "Deployment");
    assert_eq!(workloads[0]["name"], "web");
    assert_eq!(
        workloads[0]["rollout"], "progressing",
        "no controller: {status}"
    );
    assert_eq!(status["unreachable"], Value::Null);
    let objects: Vec<&str> = status["application"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(objects.contains(&"Deployment shop-1-0/web"), "{objects:?}");

    // The rollout as the Deployment's controller would report it.
    let admin = w.admin_client().await;
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(admin.clone(), "shop-1-0");
    let generation = deployments.get("web").await.unwrap().metadata.generation;
    deployments
        .patch_status(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"observedGeneration": generation,
                "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}})),
        )
        .await
        .unwrap();
    let (_, status) = call(&w.amy, &w.app, Method::GET, &format!("{apps}/{v1}"), None).await;
    let web = &status["workloads"][0];
    assert_eq!(
        (
            &web["desired"],
            &web["ready"],
            &web["available"],
            &web["rollout"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!("available")),
        "{status}"
    );

    // 2.0 beside it, in its own namespace.
    let v2 = w.deploy(deploy_body("2.0", &shop(1, true))).await;
    let versions: Vec<(String, String)> = w
        .list_apps()
        .await
        .iter()
        .map(|a| {
            (
                a["version"].as_str().unwrap().to_owned(),
                a["namespace"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("1.0".to_owned(), "shop-1-0".to_owned()),
            ("2.0".to_owned(), "shop-2-0".to_owned())
        ]
    );

    // A re-deploy of 1.0 with 3 replicas and without its ConfigMap: what it would change.
    let (status, preview) = call(
        &w.amy,
        &w.app,
        Method::POST,
        &format!("{apps}/preview"),
        Some(deploy_body("1.0", &shop(3, false))),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["namespace_exists"], true);
    let change = |kind: &str| {
        preview["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind} in {preview}"))
            .clone()
    };
    let deployment = change("Deployment");
    assert_eq!(deployment["change"], "changed", "{deployment}");
    assert_eq!(deployment["api_version"], "apps/v1");
    assert_eq!(deployment["namespace"], "shop-1-0");
    assert_eq!(
        deployment["fields"],
        json!([{"path": "spec.replicas", "before": "1", "after": "3"}]),
        "only the replicas change"
    );
    assert_eq!(change("Service")["change"], "unchanged");
    assert_eq!(change("ConfigMap")["change"], "pruned");

    // Removing 2.0: 202 with the operation, then it is gone; 1.0 stays.
    let (status, op) = call(
        &w.amy,
        &w.app,
        Method::DELETE,
        &format!("{apps}/{v2}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{op}");
    assert_eq!(op["kind"], "app-delete", "{op}");
    assert_eq!(op["target"], v2.as_str());
    let mut left = Vec::new();
    for _ in 0..600 {
        left = w.list_apps().await;
        if left.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], v1.as_str());
    let (status, _) = call(&w.amy, &w.app, Method::GET, &format!("{apps}/{v2}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Another tenant's member learns nothing, an anonymous caller even less.
    let anonymous = reqwest::Client::new();
    let body = deploy_body("3.0", &shop(1, false));
    let every: [(Method, String, Option<Value>); 5] = [
        (Method::GET, apps.clone(), None),
        (Method::POST, format!("{apps}/preview"), Some(body.clone())),
        (Method::POST, apps.clone(), Some(body)),
        (Method::GET, format!("{apps}/{v1}"), None),
        (Method::DELETE, format!("{apps}/{v1}"), None),
    ];
    for (method, path, body) in every {
        let (status, answer) = call(&w.bea, &w.app, method.clone(), &path, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "bea: {method} {path}: {answer}"
        );
        message(status, &answer);
        let (status, answer) = call(&anonymous, &w.app, method.clone(), &path, body).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "anonymous: {method} {path}"
        );
        message(status, &answer);
    }
    assert_eq!(w.list_apps().await.len(), 1, "nothing changed");
    assert!(
        deployments.get_opt("web").await.unwrap().is_some(),
        "1.0 still runs"
    );
    w.app.stop().await;
}

/// A manifest of exactly `len` bytes: a ConfigMap whose one value fills it.
fn config_map_of(len: usize) -> String {
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: ";
    let mut m = String::from(head);
    m.push_str(&"x".repeat(len - head.len() - 1));
    m.push('\n');
    assert_eq!(m.len(), len);
    m
}

/// A personal API token of `who` (its secret), so that each request may take a fresh client.
async fn token_of(app: &TestApp, who: &reqwest::Client) -> String {
    let (status, body) = call(
        who,
        app,
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "apps", "days": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["secret"].as_str().unwrap().to_owned()
}

/// Posts a preview of `manifests` on a fresh connection (the server closes one whose body it
/// refused as too large): the status and the answer.
async fn preview_fresh(w: &World, token: &str, name: &str, manifests: &str) -> (StatusCode, Value) {
    let res = reqwest::Client::new()
        .post(format!("{}{}/preview", w.app.url, w.apps()))
        .bearer_auth(token)
        .json(&json!({"name": name, "version": "1", "manifests": manifests}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A hostile answer is a 4xx in the API's error shape, never a 5xx.
fn assert_refused(what: &str, status: StatusCode, body: &Value) {
    assert!(
        matches!(status.as_u16(), 400 | 409 | 413 | 422),
        "{what}: {status} {body}"
    );
    message(status, body);
}

/// YAML-ish text: fragments of YAML's syntax, anchors and aliases, tags, numbers, words, and
/// kinds no cluster serves (so that no draw is a valid manifest by chance).
fn yamlish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("a:".to_owned()),
        Just("- ".to_owned()),
        Just("&x ".to_owned()),
        Just("*x".to_owned()),
        Just("<<: *x".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(", ".to_owned()),
        Just("---".to_owned()),
        Just("...".to_owned()),
        Just("? ".to_owned()),
        Just("|".to_owned()),
        Just(">-".to_owned()),
        Just("!!binary ".to_owned()),
        Just("!!python/object:os.system ".to_owned()),
        Just("!custom ".to_owned()),
        Just("%YAML 1.1".to_owned()),
        Just("~".to_owned()),
        Just("null".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("#".to_owned()),
        Just("\t".to_owned()),
        Just("\u{0}".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("apiVersion: v1".to_owned()),
        Just("apiVersion: example.com/v1".to_owned()),
        Just("kind: Widget".to_owned()),
        Just("kind: List".to_owned()),
        Just("items:".to_owned()),
        Just("metadata:".to_owned()),
        Just("name: x".to_owned()),
        Just("namespace: kube-system".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        Just("0x1F".to_owned()),
        Just("1e999".to_owned()),
        "[a-zA-Z0-9_.-]{1,12}",
    ];
    let separator = prop_oneof![Just(""), Just(" "), Just("\n"), Just("\n  "), Just("\n- ")];
    prop::collection::vec((fragment, separator), 0..40)
        .prop_map(|parts| parts.into_iter().map(|(f, s)| format!("{f}{s}")).collect())
}

fn manifests() -> impl Strategy<Value = String> {
    prop_oneof![
        // Any text at all.
        any::<String>(),
        ".{0,200}",
        yamlish(),
        // An object whose kind no cluster serves, with arbitrary fields.
        (
            "[A-Z][a-zA-Z]{0,12}",
            "[a-z0-9.-]{0,20}",
            prop::collection::vec(("[a-z]{1,8}", ".{0,20}"), 0..5)
        )
            .prop_map(|(kind, name, fields)| {
                let extra: String = fields
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {}\n", json!(v)))
                    .collect();
                format!(
                    "apiVersion: kqueen.test/v1\nkind: Fuzz{kind}\nmetadata:\n  name: \
                     {}\n{extra}",
                    json!(name)
                )
            }),
    ]
}

/// Hand-written bombs: what the parser's limits are for.
fn bombs() -> Vec<(&'static str, String)> {
    let laughs = {
        let mut m = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (i, c) in ('b'..='j').enumerate() {
            let prev = char::from(b'a' + u8::try_from(i).unwrap());
            m.push_str(&format!(
                "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
        }
        m
    };
    let kinds = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    vec![
        ("billion laughs", laughs),
        (
            "billion laughs in an object",
            format!("{kinds}data: &a {{x: *a}}\n"),
        ),
        (
            "1000-deep flow nesting",
            "[".repeat(1000) + &"]".repeat(1000),
        ),
        (
            "1000-deep block nesting",
            (0..1000)
                .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                .collect(),
        ),
        ("1000-deep list", "- ".repeat(1000) + "x"),
        ("1 MiB and a byte", config_map_of(1024 * 1024 + 1)),
        (
            "unknown kind",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n".to_owned(),
        ),
        (
            "an object in kube-system",
            format!("{kinds}  namespace: kube-system\n"),
        ),
        ("no name", "apiVersion: v1\nkind: ConfigMap\n".to_owned()),
        ("nothing", String::new()),
        ("a thousand documents", "---\n".repeat(1000)),
        ("501 objects", format!("{kinds}---\n").repeat(501)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_manifests_always_get_a_4xx_in_the_error_shape() {
    let Some(w) = world().await else { return };
    let token = token_of(&w.app, &w.amy).await;

    // A 1 MiB manifest passes (its JSON body is within the API's 2 MiB).
    let (status, body) = preview_fresh(&w, &token, "big", &config_map_of(1024 * 1024)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["objects"][0]["kind"], "ConfigMap", "{body}");
    // Over the body limit: 413 in the API's error shape.
    let (status, body) = preview_fresh(&w, &token, "big", &"#".repeat(2 * 1024 * 1024)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    message(status, &body);

    for (what, manifests) in bombs() {
        let (status, body) = preview_fresh(&w, &token, "shop", &manifests).await;
        assert_refused(what, status, &body);
    }

    // Arbitrary and YAML-ish text: one server and one API server for all cases.
    let config = ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let handle = tokio::runtime::Handle::current();
    let client = reqwest::Client::new();
    let url = format!("{}{}/preview", w.app.url, w.apps());
    let result = tokio::task::block_in_place(|| {
        proptest::test_runner::TestRunner::new(config).run(&manifests(), |manifests| {
            let (status, body) = handle.block_on(async {
                let res = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&json!({"name": "shop", "version": "1", "manifests": manifests}))
                    .send()
                    .await
                    .unwrap();
                let status = res.status();
                let text = res.text().await.unwrap();
                (
                    status,
                    serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
                )
            });
            prop_assert!(
                matches!(status.as_u16(), 400 | 409 | 413 | 422),
                "{status} {body} for {manifests:?}"
            );
            prop_assert_eq!(&body["status"], &json!(status.as_u16()));
            prop_assert!(
                body["error"].as_str().is_some_and(|m| !m.is_empty()),
                "{body}"
            );
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }

    // The server is up, and nothing was queued or made.
    assert_eq!(w.app.get("/healthz").await.status(), StatusCode::OK);
    assert!(w.list_apps().await.is_empty());
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(w.admin_client().await);
    assert!(namespaces.get_opt("shop-1").await.unwrap().is_none());
    w.app.stop().await;
}

#[tokio::test]
async fn the_document_lists_the_application_operations() {
    let app = TestApp::sqlite().await;
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let paths = &doc["paths"];
    let schema = |path: &str, method: &str, status: &str| {
        let op = &paths[path][method];
        assert_eq!(op["tags"], json!(["applications"]), "{method} {path}: {op}");
        op["responses"][status]["content"]["application/json"]["schema"].clone()
    };
    let schema_ref = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let apps = "/api/v1/clusters/{id}/apps";
    let app_path = "/api/v1/clusters/{id}/apps/{app}";
    assert_eq!(
        schema(apps, "get", "200"),
        json!({"type": "array", "items": schema_ref("Application")})
    );
    assert_eq!(
        schema(&format!("{apps}/preview"), "post", "200"),
        schema_ref("DeployPreview")
    );
    assert_eq!(schema(apps, "post", "202"), schema_ref("DeployAccepted"));
    assert_eq!(
        schema(app_path, "get", "200"),
        schema_ref("ApplicationStatus")
    );
    assert_eq!(schema(app_path, "delete", "202"), schema_ref("Operation"));
    for path in [apps.to_owned(), format!("{apps}/preview")] {
        assert_eq!(
            paths[&path]["post"]["requestBody"]["content"]["application/json"]["schema"],
            schema_ref("DeployRequest"),
            "{path}"
        );
        for status in ["400", "404", "409", "413"] {
            assert!(
                paths[&path]["post"]["responses"][status].is_object(),
                "{path} {status}"
            );
        }
    }
    let schemas = &doc["components"]["schemas"];
    for name in [
        "Application",
        "DeployRequest",
        "DeployPreview",
        "ObjectDiff",
        "FieldChange",
        "ApplicationStatus",
        "Workload",
        "FailingPod",
        "Warning",
        "DeployAccepted",
    ] {
        assert!(schemas[name].is_object(), "schema {name}");
    }
    assert_eq!(
        schemas["DeployAccepted"]["properties"]["operation"],
        schema_ref("Operation")
    );
    assert!(doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "applications"));
    app.stop().await;
}

/// The fake Kubernetes API of `make api-fuzz` (and of most API tests) cannot apply server-side:
/// against it every application endpoint answers, a write with a 4xx saying why, never a 5xx.
#[tokio::test]
async fn a_cluster_that_cannot_apply_gets_answers_not_server_errors() {
    use kqueen_testkit::fake_kube::FakeKube;

    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    offer_import(&app, &olga).await;
    let (id, _, _) = crate::clusters::import_fake(&app, &amy, &fake).await;
    let apps = format!("/api/v1/clusters/{id}/apps");
    for who in [&amy, &olga] {
        for path in [format!("{apps}/preview"), apps.clone()] {
            let (status, body) = call(
                who,
                &app,
                Method::POST,
                &path,
                Some(deploy_body("1.0", &shop(1, true))),
            )
            .await;
            // Its discovery serves nothing: "kind ConfigMap (v1) is not served".
            assert_refused(&path, status, &body);
        }
    }
    let (status, body) = call(&amy, &app, Method::GET, &apps, None).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!([])),
        "nothing queued"
    );
    // A well-formed id that names no version.
    let nobody = "0194e0c5-3c1e-7000-8000-000000000000";
    for method in [Method::GET, Method::DELETE] {
        let (status, body) = call(&amy, &app, method, &format!("{apps}/{nobody}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        message(status, &body);
    }
    app.stop().await;
}
