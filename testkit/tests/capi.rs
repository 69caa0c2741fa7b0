//! The fake Cluster API against a real kube-apiserver: CRDs of both generations, a Cluster
//! provisioned, scaled, upgraded and deleted by [`FakeCapi`].

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::capi::{self, FakeCapi, Served};
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

async fn admin(server: &RealApiServer) -> kube::Client {
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&server.admin_kubeconfig(), None, false).unwrap();
    kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap()
}

/// Polls `check` until it returns `Some`, at most 30 s.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn condition<'a>(cluster: &'a DynamicObject, kind: &str) -> Option<&'a serde_json::Value> {
    cluster.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn is_true(cluster: &DynamicObject, kind: &str) -> bool {
    condition(cluster, kind).is_some_and(|c| c["status"] == "True")
}

fn cluster(served: Served, name: &str, workers: i64, version: &str) -> DynamicObject {
    let ar = served.resource("Cluster");
    let mut topology = json!({
        "version": version,
        "controlPlane": {"replicas": 1},
        "workers": {"machineDeployments": [{
            "class": "default-worker",
            "name": "md-0",
            "replicas": workers,
            "variables": {"overrides": [{"name": "flavor", "value": "large"}]},
        }]},
        "variables": [{"name": "region", "value": "eu-west-1"}, {"name": "extra", "value": {"a": [1, 2]}}],
    });
    if served == Served::Both {
        topology["classRef"] = json!({"name": "quick-start"});
    } else {
        topology["class"] = json!("quick-start");
    }
    serde_json::from_value(json!({
        "apiVersion": ar.api_version,
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"topology": topology},
    }))
    .unwrap()
}

/// (phase, version) of each Machine of `cluster`.
async fn machines(api: &Api<DynamicObject>, cluster: &str) -> Vec<(String, String)> {
    let params = ListParams::default().labels(&format!("{}={cluster}", capi::CLUSTER_NAME_LABEL));
    api.list(&params)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|m| {
            (
                m.data["status"]["phase"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                m.data["spec"]["version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn v1beta2_cluster_is_provisioned_scaled_upgraded_and_deleted() {
    let Some(server) = RealApiServer::start().await else {
        return;
    };
    let client = admin(&server).await;
    capi::install_crds(&client, Served::Both).await.unwrap();
    // Twice: installing is idempotent.
    capi::install_crds(&client, Served::Both).await.unwrap();
    capi::create_cluster_class(&client, "default", "quick-start", Served::Both)
        .await
        .unwrap();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &Served::Both.resource("Cluster"));
    let machine_api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &Served::Both.resource("Machine"));
    clusters
        .create(
            &PostParams::default(),
            &cluster(Served::Both, "demo", 2, "v1.30.0"),
        )
        .await
        .unwrap();

    let fake = FakeCapi::start(client.clone(), Served::Both, Duration::from_millis(100));
    // Without a kubeconfig it waits before the control plane.
    let waiting = eventually("infrastructure ready", || async {
        let c = clusters.get("demo").await.ok()?;
        is_true(&c, "InfrastructureReady").then_some(c)
    })
    .await;
    assert_eq!(waiting.data["status"]["phase"], "Provisioning");
    assert_eq!(
        waiting.data["status"]["initialization"]["infrastructureProvisioned"],
        true
    );
    let initialized = condition(&waiting, "ControlPlaneInitialized").unwrap();
    assert_eq!(initialized["status"], "False");
    assert_eq!(initialized["reason"], "WaitingForControlPlane");
    assert!(waiting.finalizers().iter().any(|f| f == capi::FINALIZER));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let still = clusters.get("demo").await.unwrap();
    assert!(!is_true(&still, "ControlPlaneInitialized"));

    fake.set_kubeconfig(server.admin_kubeconfig());
    let available = eventually("available", || async {
        let c = clusters.get("demo").await.ok()?;
        is_true(&c, "Available").then_some(c)
    })
    .await;
    let status = &available.data["status"];
    println!("status: {status:#}");
    assert_eq!(status["phase"], "Provisioned");
    assert_eq!(status["initialization"]["controlPlaneInitialized"], true);
    assert!(is_true(&available, "ControlPlaneAvailable"));
    assert!(is_true(&available, "WorkersAvailable"));
    assert_eq!(status["controlPlane"]["readyReplicas"], 1);
    assert_eq!(status["workers"]["desiredReplicas"], 2);
    assert_eq!(status["workers"]["upToDateReplicas"], 2);
    let port: u16 = server.url().rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        available.data["spec"]["controlPlaneEndpoint"],
        json!({"host": "127.0.0.1", "port": port})
    );
    // Unknown fields survive the schema.
    assert_eq!(
        available.data["spec"]["topology"]["variables"][1]["value"],
        json!({"a": [1, 2]})
    );
    assert_eq!(
        available.data["spec"]["topology"]["classRef"]["name"],
        "quick-start"
    );
    let running = machines(&machine_api, "demo").await;
    assert_eq!(
        running,
        vec![("Running".to_owned(), "v1.30.0".to_owned()); 3]
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = secrets.get("demo-kubeconfig").await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    let value = secret.data.unwrap().remove("value").unwrap().0;
    assert_eq!(String::from_utf8(value).unwrap(), server.admin_kubeconfig());
    // The same object through v1beta1 (no conversion webhook: only apiVersion changes).
    let old: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &Served::V1Beta1.resource("Cluster"),
    );
    assert_eq!(
        old.get("demo").await.unwrap().data["status"]["phase"],
        "Provisioned"
    );

    let patch = json!({"spec": {"topology": {
        "version": "v1.31.0",
        "workers": {"machineDeployments": [{"class": "default-worker", "name": "md-0", "replicas": 1}]},
    }}});
    clusters
        .patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("scaled down and upgraded", || async {
        let c = clusters.get("demo").await.ok()?;
        let m = machines(&machine_api, "demo").await;
        let upgraded = m.len() == 2 && m.iter().all(|(p, v)| p == "Running" && v == "v1.31.0");
        (upgraded && is_true(&c, "Available")).then_some(())
    })
    .await;

    clusters
        .delete("demo", &DeleteParams::default())
        .await
        .unwrap();
    eventually("deleted", || async {
        clusters.get_opt("demo").await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(machines(&machine_api, "demo").await.is_empty());
    assert!(secrets.get_opt("demo-kubeconfig").await.unwrap().is_none());
}

#[tokio::test]
async fn v1beta1_cluster_becomes_ready() {
    let Some(server) = RealApiServer::start().await else {
        return;
    };
    let client = admin(&server).await;
    capi::install_crds(&client, Served::V1Beta1).await.unwrap();
    capi::create_cluster_class(&client, "default", "quick-start", Served::V1Beta1)
        .await
        .unwrap();
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &Served::V1Beta1.resource("Cluster"),
    );
    clusters
        .create(
            &PostParams::default(),
            &cluster(Served::V1Beta1, "old", 1, "v1.29.3"),
        )
        .await
        .unwrap();
    let fake = FakeCapi::start(client.clone(), Served::V1Beta1, Duration::from_millis(100));
    fake.set_kubeconfig(server.admin_kubeconfig());
    let ready = eventually("ready", || async {
        let c = clusters.get("old").await.ok()?;
        is_true(&c, "Ready").then_some(c)
    })
    .await;
    let status = &ready.data["status"];
    println!("status: {status:#}");
    assert_eq!(status["phase"], "Provisioned");
    assert_eq!(status["infrastructureReady"], true);
    assert_eq!(status["controlPlaneReady"], true);
    assert!(is_true(&ready, "ControlPlaneReady"));
    assert_eq!(ready.data["spec"]["topology"]["class"], "quick-start");
}

#[tokio::test]
async fn annotations_make_clusters_fail_hang_or_publish_garbage() {
    let Some(server) = RealApiServer::start().await else {
        return;
    };
    let client = admin(&server).await;
    capi::install_crds(&client, Served::Both).await.unwrap();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &Served::Both.resource("Cluster"));
    for (name, annotation, value) in [
        ("failed", capi::FAIL_ANNOTATION, "quota exceeded"),
        ("stuck", capi::STUCK_ANNOTATION, "no capacity in eu-west-1"),
        ("garbage", capi::BAD_KUBECONFIG_ANNOTATION, ""),
        ("secretless", capi::NO_KUBECONFIG_ANNOTATION, ""),
    ] {
        let mut c = cluster(Served::Both, name, 1, "v1.30.0");
        c.metadata.annotations = Some([(annotation.to_owned(), value.to_owned())].into());
        clusters.create(&PostParams::default(), &c).await.unwrap();
    }
    let fake = FakeCapi::start(client.clone(), Served::Both, Duration::from_millis(100));
    fake.set_kubeconfig(server.admin_kubeconfig());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    eventually("annotated outcomes", || async {
        let failed = clusters.get("failed").await.ok()?;
        let stuck = clusters.get("stuck").await.ok()?;
        let garbage = secrets.get_opt("garbage-kubeconfig").await.ok()??;
        let secretless = clusters.get("secretless").await.ok()?;
        let failure = &failed.data["status"]["deprecated"]["v1beta1"]["failureMessage"];
        let stuck_message = &condition(&stuck, "ControlPlaneInitialized")?["message"];
        let ok = failed.data["status"]["phase"] == "Failed"
            && failure == "quota exceeded"
            && stuck_message == "no capacity in eu-west-1"
            && garbage.data?.get("value")?.0 == b"this is not a kubeconfig"
            && is_true(&secretless, "Available");
        ok.then_some(())
    })
    .await;
    assert!(secrets
        .get_opt("secretless-kubeconfig")
        .await
        .unwrap()
        .is_none());
    assert!(!is_true(
        &clusters.get("stuck").await.unwrap(),
        "ControlPlaneInitialized"
    ));
}
