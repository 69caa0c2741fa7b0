//! Cluster API providers over /api/v1: an operator defines one (its management cluster's
//! kubeconfig a secret that never comes back), lists the Clusters its management cluster
//! holds and adopts one into a tenant. Only operators may; a provider of another kind, a
//! management cluster that cannot be reached or serves no Cluster API answer why.

use std::time::Duration;

use kqueen_core::kubernetes::parse_kubeconfig;
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::capi::{self, FakeCapi, Served};
use kube::api::{Api, DynamicObject, PostParams};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, offer_import};
use crate::helpers::TestApp;
use crate::real_cluster::message;

/// A token no answer may contain: the management kubeconfig is a secret.
const SECRET: &str = "capi-management-token-7f3a";

fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n    server: {server}\n\
         contexts:\n- name: m\n  context: {{cluster: m, user: u}}\ncurrent-context: m\n\
         users:\n- name: u\n  user: {{token: {SECRET}}}\n"
    )
}

/// The operator `olga` defines provider `capi` (management cluster at `kubeconfig`) and
/// its template `capi`, offered to every tenant.
async fn offer_cluster_api(app: &TestApp, olga: &reqwest::Client, kubeconfig: &str) {
    let provider = json!({"name": "capi", "kind": "cluster-api", "settings": {
        "management_kubeconfig": kubeconfig, "cluster_class": "quick-start"}});
    let (status, body) = call(olga, app, Method::POST, "/api/v1/providers", Some(provider)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(!body.to_string().contains(SECRET), "never echoed: {body}");
    let template = json!({"name": "capi", "provider": "capi"});
    let (status, body) = call(olga, app, Method::POST, "/api/v1/templates", Some(template)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn operators_define_cluster_api_providers_as_the_document_describes() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;

    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let schemas = &doc["components"]["schemas"];
    let settings = &schemas["ProviderInClusterApi"]["properties"]["settings"];
    assert_eq!(
        settings["required"],
        json!(["management_kubeconfig", "cluster_class"]),
        "{settings}"
    );
    let kc = &settings["properties"]["management_kubeconfig"];
    assert_eq!(
        (&kc["format"], &kc["writeOnly"]),
        (&json!("required-kubeconfig"), &json!(true)),
        "{kc}"
    );
    assert_eq!(settings["properties"]["pod_cidr"]["format"], "cidr");
    assert_eq!(
        settings["properties"]["cluster_class"]["pattern"],
        kqueen_server::api::DNS_LABEL
    );
    let update = &schemas["ProviderUpdateInClusterApi"]["properties"]["settings"];
    assert_eq!(update["required"], json!(["cluster_class"]), "{update}");
    let paths = &doc["paths"];
    let list = &paths["/api/v1/providers/{name}/clusters"]["get"];
    let adopt = &paths["/api/v1/clusters/adopt"]["post"];
    for (op, statuses) in [
        (list, &["200", "401", "403", "404", "409"][..]),
        (adopt, &["202", "400", "401", "403", "404", "409"][..]),
    ] {
        for s in statuses {
            assert!(op["responses"][*s].is_object(), "{s}: {op}");
        }
    }
    assert_eq!(
        adopt["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/AdoptRequest"
    );
    assert_eq!(
        adopt["responses"]["202"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ClusterAccepted"
    );
    assert!(schemas["AdoptableCluster"]["properties"]["reference"].is_object());

    let provider =
        |settings: Value| json!({"name": "capi", "kind": "cluster-api", "settings": settings});
    let good = json!({"management_kubeconfig": kubeconfig("https://127.0.0.1:1"),
                      "cluster_class": "quick-start", "namespace_per_tenant": true});
    let (status, _) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider(good.clone())),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // What the document requires, the server requires, naming the field.
    for (settings, field) in [
        (
            json!({"management_kubeconfig": kubeconfig("https://127.0.0.1:1")}),
            "cluster_class",
        ),
        (
            json!({"cluster_class": "quick-start"}),
            "management_kubeconfig",
        ),
        (
            json!({"management_kubeconfig": kubeconfig("https://127.0.0.1:1"), "cluster_class": "Quick Start"}),
            "cluster_class",
        ),
        (
            json!({"management_kubeconfig": "not: [a kubeconfig", "cluster_class": "quick-start"}),
            "management_kubeconfig",
        ),
    ] {
        let (status, body) = call(
            &olga,
            &app,
            Method::POST,
            "/api/v1/providers",
            Some(provider(settings.clone())),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{settings}: {body}");
        let m = message(status, &body);
        assert!(m.contains(field), "{settings}: {m}");
        assert!(!m.contains(SECRET), "{m}");
    }
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider(good)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "cluster-api");
    assert_eq!(
        body["secret_fields"],
        json!(["management_kubeconfig"]),
        "{body}"
    );
    assert!(
        body["settings"].get("management_kubeconfig").is_none(),
        "{body}"
    );
    for path in ["/api/v1/providers/capi", "/api/v1/providers"] {
        let (status, body) = call(&olga, &app, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!body.to_string().contains(SECRET), "{path}: {body}");
    }
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/templates",
        Some(json!({"name": "capi", "provider": "capi", "tenants": ["team-a"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn only_operators_list_and_adopt_and_are_told_why_it_cannot_be_done() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let adam = app.user("adam", false, &[("team-a", "admin")]).await;
    let anonymous = app.browser();
    offer_cluster_api(&app, &olga, &kubeconfig("https://127.0.0.1:1")).await;
    offer_import(&app, &olga).await;
    let list = "/api/v1/providers/capi/clusters";
    let adopt = "/api/v1/clusters/adopt";
    let request = |template: &str| json!({"tenant": "team-a", "name": "taken", "template": template, "reference": "default/work"});

    for (who, want) in [
        (&amy, StatusCode::FORBIDDEN),
        (&adam, StatusCode::FORBIDDEN),
        (&anonymous, StatusCode::UNAUTHORIZED),
    ] {
        let (status, body) = call(who, &app, Method::GET, list, None).await;
        assert_eq!(status, want, "GET {list}: {body}");
        message(status, &body);
        let (status, body) = call(who, &app, Method::POST, adopt, Some(request("capi"))).await;
        assert_eq!(status, want, "POST {adopt}: {body}");
        message(status, &body);
    }

    // What names nothing, and a provider whose kind has no clusters to adopt.
    let (status, body) = call(
        &olga,
        &app,
        Method::GET,
        "/api/v1/providers/nope/clusters",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = call(&olga, &app, Method::POST, adopt, Some(request("nope"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(message(status, &body).contains("template"), "{body}");
    let (status, body) = call(
        &olga,
        &app,
        Method::GET,
        "/api/v1/providers/existing/clusters",
        None,
    )
    .await;
    // The provider is what it is: a conflict, not a wrong input (the fuzzer holds the
    // document to that: a request valid for it is never a 400).
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        message(status, &body).contains("no existing clusters to adopt"),
        "{body}"
    );
    // Naming such a provider's template is the adoption's wrong input.
    let (status, body) = call(&olga, &app, Method::POST, adopt, Some(request("import"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(message(status, &body).starts_with("template"), "{body}");

    // Malformed bodies: the house's JSON refusals, naming what is wrong.
    for (body, field) in [
        (json!({"tenant": "team-a", "template": "capi"}), "reference"),
        (
            json!({"tenant": 7, "template": "capi", "reference": "default/work"}),
            "tenant",
        ),
    ] {
        let (status, answer) = call(&olga, &app, Method::POST, adopt, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert!(message(status, &answer).contains(field), "{body}: {answer}");
    }
    let res = olga
        .post(format!("{}{adopt}", app.url))
        .header("content-type", "application/json")
        .body("{\"tenant\": ")
        .send()
        .await
        .unwrap();
    let status = res.status();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    message(status, &res.json().await.unwrap());

    // The management cluster cannot be reached: 409, saying so.
    let (status, body) = call(&olga, &app, Method::GET, list, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let m = message(status, &body);
    assert!(m.contains("management cluster"), "{m}");
    assert!(!m.contains(SECRET), "{m}");
    let (status, body) = call(&olga, &app, Method::POST, adopt, Some(request("capi"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        message(status, &body).contains("management cluster"),
        "{body}"
    );
    let (_, clusters) = call(&olga, &app, Method::GET, "/api/v1/clusters", None).await;
    assert_eq!(clusters["total"], 0, "nothing adopted: {clusters}");
    app.stop().await;
}

/// A real management cluster: without the Cluster API CRDs, listing names what is missing;
/// with them (and the test kit's fake Cluster API controller), a Cluster made behind
/// KQueen's back is listed and adopted, then followed to Ready like any request.
#[tokio::test]
async fn a_real_management_cluster_lists_its_clusters_and_one_is_adopted() {
    // Without KQUEEN_TEST_KUBE_APISERVER, `start` prints "skipped: …" and the test passes.
    let Some(kube) = RealApiServer::start().await else {
        return;
    };
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    offer_cluster_api(&app, &olga, &kube.admin_kubeconfig()).await;
    let list = "/api/v1/providers/capi/clusters";
    let (status, body) = call(&olga, &app, Method::GET, list, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let m = message(status, &body);
    assert!(m.contains("clusters.cluster.x-k8s.io"), "{m}");

    let parsed = parse_kubeconfig(&kube.admin_kubeconfig(), None, false).unwrap();
    let admin = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    capi::install_crds(&admin, Served::Both).await.unwrap();
    capi::create_cluster_class(&admin, "default", "quick-start", Served::Both)
        .await
        .unwrap();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), "default", &Served::Both.resource("Cluster"));
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "work", "namespace": "default"},
        "spec": {"topology": {
            "classRef": {"name": "quick-start"}, "version": "v1.31.2",
            "controlPlane": {"replicas": 1},
            "workers": {"machineDeployments": [
                {"class": "default-worker", "name": "md-0", "replicas": 1}]}}}}))
    .unwrap();
    clusters
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let fake = FakeCapi::start(admin.clone(), Served::Both, Duration::from_millis(100));
    fake.set_kubeconfig(kube.admin_kubeconfig());

    let (status, body) = call(&olga, &app, Method::GET, list, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let found = body.as_array().unwrap();
    assert_eq!(found.len(), 1, "{body}");
    let work = &found[0];
    assert_eq!(
        (
            &work["reference"],
            &work["name"],
            &work["location"],
            &work["class"]
        ),
        (
            &json!("default/work"),
            &json!("work"),
            &json!("default"),
            &json!("quick-start")
        ),
        "{work}"
    );
    assert_eq!(work["kubernetes_version"], "v1.31.2", "{work}");
    assert!(work["adopted_by"].is_null(), "{work}");

    let adopt = json!({"tenant": "team-a", "template": "capi", "reference": "default/work"});
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/clusters/adopt",
        Some(adopt),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["cluster"]["name"], "work", "{body}");
    assert_eq!(body["cluster"]["tenant"], "team-a", "{body}");
    assert_eq!(body["operation"]["kind"], "create", "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    // The take-over is the cluster's create operation: followed to Ready.
    let mut last = Value::Null;
    for _ in 0..240 {
        let (_, cluster) = call(
            &olga,
            &app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        if cluster["state"] == "ready" || cluster["state"] == "error" {
            last = cluster;
            break;
        }
        last = cluster;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(last["state"], "ready", "{last}");
    let (_, body) = call(&olga, &app, Method::GET, list, None).await;
    assert_eq!(body[0]["adopted_by"], json!(id), "{body}");
    drop(fake);
    app.stop().await;
}
