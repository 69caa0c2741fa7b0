//! Key-space backups of hosted clusters through /api/v1, with the real kube-apiserver and
//! kube-controller-manager on a real etcd (TLS, client certificates, auth on): a tenant admin
//! copies a hosted cluster's key space, downloads an archive that lists its keys and holds no
//! value, previews and restores it into a second hosted cluster, whose API server then serves
//! the first's objects; members, other tenants and wrong requests are refused.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::call;
use crate::helpers::TestApp;
use kqueen_testkit::tls_etcd::TlsEtcd;
use kqueen_testkit::TestDatabase;

/// A client of the hosted cluster `id` through the admin kubeconfig an operator downloads.
async fn kube_of(app: &TestApp, operator: &reqwest::Client, id: &str) -> kube::Client {
    let path = format!("/api/v1/clusters/{id}/kubeconfig");
    let (status, body) = call(operator, app, Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A hosted cluster's admin kubeconfig is JSON (which is YAML): it arrives parsed here.
    let text = body
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| body.to_string());
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(&text, None, false).unwrap();
    kqueen_core::kubernetes::client(&parsed, Duration::from_secs(5))
        .await
        .unwrap()
}

/// Waits (up to two minutes: two control planes start at once) until cluster `id` is Ready.
async fn ready(app: &TestApp, who: &reqwest::Client, id: &str) {
    let started = Instant::now();
    loop {
        let (_, body) = call(
            who,
            app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        match body["state"].as_str() {
            Some("ready") => return,
            Some("error") => panic!("{body}"),
            _ => {
                assert!(started.elapsed() < Duration::from_secs(120), "{body}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}

async fn ask(
    client: &reqwest::Client,
    app: &TestApp,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    call(client, app, Method::POST, path, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_key_space_is_copied_and_served_again_by_a_second_hosted_cluster() {
    let Some((apiserver, cm)) = crate::hosted::binaries() else {
        return;
    };
    let etcd = TlsEtcd::start().await;
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_owned();
    let app = TestApp::spawn(TestDatabase::sqlite(), move |s, _| s.data_dir = data_dir).await;
    // The control planes' processes are stopped even when an assertion fails.
    let _guard = kqueen_testkit::process::KillOnDrop(data.path().join("work"));
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let bob = app.user("bob", false, &[("team-b", "admin")]).await;

    let provider = crate::hosted::hosted_provider(&etcd, &apiserver, &cm);
    let (status, body) = ask(&olga, &app, "/api/v1/providers", provider).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let template = json!({"name": "hosted", "provider": "shared", "tenants": ["team-a"]});
    let (status, body) = ask(&olga, &app, "/api/v1/templates", template).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut ids = Vec::new();
    for name in ["prod", "spare"] {
        let req = json!({"tenant": "team-a", "name": name, "template": "hosted"});
        let (status, body) = ask(&tim, &app, "/api/v1/clusters", req).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        ids.push(body["cluster"]["id"].as_str().unwrap().to_owned());
    }
    let (prod, spare) = (ids[0].clone(), ids[1].clone());
    ready(&app, &tim, &prod).await;
    ready(&app, &tim, &spare).await;

    // What prod holds: a namespace and a ConfigMap in it.
    let prod_kube = kube_of(&app, &olga, &prod).await;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap();
    kube::Api::<Namespace>::all(prod_kube.clone())
        .create(&Default::default(), &ns)
        .await
        .unwrap();
    let settings: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "settings", "namespace": "shop"},
        "data": {"colour": "ultramarine-7f3a"}
    }))
    .unwrap();
    kube::Api::<ConfigMap>::namespaced(prod_kube, "shop")
        .create(&Default::default(), &settings)
        .await
        .unwrap();

    // Refusals: a member, an unknown kind, volume snapshots of a key space.
    let backups = format!("/api/v1/clusters/{prod}/backups");
    let (status, _) = ask(&amy, &app, &backups, json!({"kind": "key_space"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = ask(&tim, &app, &backups, json!({"kind": "everything"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("kind"), "{body}");
    let both = json!({"kind": "key_space", "snapshot_volumes": true});
    let (status, body) = ask(&tim, &app, &backups, both).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The copy: every key of prod's key space at one revision, sealed in the vault.
    let (status, accepted) = ask(&tim, &app, &backups, json!({"kind": "key_space"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let backup = accepted["backup"]["id"].as_str().unwrap().to_owned();
    let path = format!("{backups}/{backup}");
    let started = Instant::now();
    let taken = loop {
        let (status, body) = call(&tim, &app, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        match body["state"].as_str() {
            Some("succeeded") => break body,
            Some("failed") => panic!("the backup failed: {body}"),
            _ => {
                assert!(started.elapsed() < Duration::from_secs(120), "{body}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    assert_eq!(taken["kind"], "key_space", "{taken}");
    assert_eq!(taken["include_secrets"], true, "{taken}");
    let copy = &taken["contents"]["key_space"];
    assert!(copy["keys"].as_u64().unwrap() > 20, "{taken}");
    assert!(copy["revision"].as_i64().unwrap() > 0, "{taken}");
    let namespaces = taken["contents"]["namespaces"].to_string();
    assert!(namespaces.contains("\"shop\""), "{taken}");

    // The archive lists the keys; no value is in it.
    let res = app.get_as(&tim, &format!("{path}/archive")).await;
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = res.bytes().await.unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_ref()));
    let mut files = std::collections::BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        files.insert(name, text);
    }
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["backup.yaml", "keys.txt"],
        "{files:?}"
    );
    assert!(files["keys.txt"].contains("configmaps/shop/settings"));
    assert!(
        !files.values().any(|f| f.contains("ultramarine-7f3a")),
        "values are sealed in the vault, never in the archive"
    );

    // Another tenant's admin does not find it; a key space is restored whole.
    let (status, _) = call(
        &bob,
        &app,
        Method::GET,
        &format!("/api/v1/backups/{backup}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let plan = format!("{path}/restore/plan");
    let partial = json!({"target_cluster": spare, "namespaces": ["shop"]});
    let (status, body) = ask(&tim, &app, &plan, partial).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The plan says what loading it into spare changes; the restore does it.
    let into_spare = json!({"target_cluster": spare});
    let (status, body) = ask(&tim, &app, &plan, into_spare.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["key_space"]["written"].as_u64().unwrap() > 0, "{body}");
    assert_eq!(body["items"], json!([]), "{body}");
    let (status, body) = ask(&tim, &app, &format!("{path}/restore"), into_spare).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let restore = body["restore"]["id"].as_str().unwrap().to_owned();
    let status_path = format!("/api/v1/clusters/{spare}/restores/{restore}");
    let started = Instant::now();
    loop {
        let (_, body) = call(&tim, &app, Method::GET, &status_path, None).await;
        if body["state"] != "running" {
            assert_eq!(body["state"], "succeeded", "{body}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // spare's own API server serves prod's objects now.
    let spare_kube = kube_of(&app, &olga, &spare).await;
    let configmaps = kube::Api::<ConfigMap>::namespaced(spare_kube.clone(), "shop");
    let started = Instant::now();
    let restored = loop {
        match configmaps.get_opt("settings").await {
            Ok(Some(c)) => break c,
            other => {
                assert!(started.elapsed() < Duration::from_secs(30), "{other:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let colour = restored.data.unwrap_or_default().remove("colour");
    assert_eq!(colour.as_deref(), Some("ultramarine-7f3a"));
    let (_, events) = call(
        &tim,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{spare}/events"),
        None,
    )
    .await;
    assert!(
        events.to_string().contains("Restored key-space backup"),
        "{events}"
    );

    // A schedule copies the key space too: due at once, taken by the sweep.
    let schedule = format!("{backups}/schedule");
    let every_day = json!({"every_hours": 24, "keep": 1, "kind": "key_space"});
    let (status, set) = call(&tim, &app, Method::PUT, &schedule, Some(every_day)).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(
        (set["kind"].as_str(), set["include_secrets"].as_bool()),
        (Some("key_space"), Some(true)),
        "{set}"
    );
    app.on_server(|s| async move { s.kqueen.backups().run_schedules(chrono::Utc::now()).await })
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let (_, list) = call(&tim, &app, Method::GET, &backups, None).await;
        let scheduled: Vec<&Value> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["requested_by"] == "schedule")
            .collect();
        if let Some(b) = scheduled.first().filter(|b| b["state"] != "running") {
            assert_eq!(
                (b["state"].as_str(), b["kind"].as_str()),
                (Some("succeeded"), Some("key_space")),
                "{b}"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{list}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Deleted: its sealed copy goes with it.
    let (status, _) = call(
        &tim,
        &app,
        Method::DELETE,
        &format!("/api/v1/backups/{backup}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&tim, &app, Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    for id in [&prod, &spare] {
        let (status, _) = call(
            &tim,
            &app,
            Method::DELETE,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    for id in [&prod, &spare] {
        let started = Instant::now();
        while call(
            &tim,
            &app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await
        .0 != StatusCode::NOT_FOUND
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{id} not deleted"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    app.stop().await;
}
