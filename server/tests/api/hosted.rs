//! Hosted clusters through /api/v1 and the portal, with the real kube-apiserver and
//! kube-controller-manager (`KQUEEN_TEST_KUBE_APISERVER`, `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER`)
//! on a real etcd with TLS, client certificates and auth on: an operator defines a hosted
//! provider and a template, a member requests a cluster that reaches Ready, gets the join
//! command on the API and the page, revokes the token, and deletes the cluster; an operator's
//! tiny storage quota makes it read-only in etcd for an inventory round, as the fleet shows.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::cli::Laptop;
use crate::clusters::{call, wait_for_state};
use crate::helpers::TestApp;
use kqueen_testkit::tls_etcd::TlsEtcd;

/// The real binaries, or None after saying why the test is skipped.
#[allow(clippy::print_stdout)]
pub(crate) fn binaries() -> Option<(String, String)> {
    let found = (
        std::env::var("KQUEEN_TEST_KUBE_APISERVER"),
        std::env::var("KQUEEN_TEST_KUBE_CONTROLLER_MANAGER"),
    );
    match found {
        (Ok(apiserver), Ok(cm)) => Some((apiserver, cm)),
        _ => {
            println!("skipped: KQUEEN_TEST_KUBE_APISERVER and _CONTROLLER_MANAGER name the real binaries");
            None
        }
    }
}

/// A hosted provider `shared` on `etcd`, offering 1.20 with these binaries.
pub(crate) fn hosted_provider(etcd: &TlsEtcd, apiserver: &str, cm: &str) -> serde_json::Value {
    let mut settings: serde_json::Map<String, serde_json::Value> = etcd
        .provider_settings()
        .into_iter()
        .map(|(field, value)| (field.to_owned(), value.into()))
        .collect();
    settings.insert("versions".into(), format!("1.20 {apiserver} {cm}").into());
    json!({"name": "shared", "kind": "hosted", "settings": settings})
}

#[tokio::test]
async fn members_get_hosted_clusters_and_their_join_command() {
    let Some((apiserver, cm)) = binaries() else {
        return;
    };
    let etcd = TlsEtcd::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;

    let (_, kinds) = call(&olga, &app, Method::GET, "/api/v1/provider-kinds", None).await;
    let hosted = kinds
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "hosted")
        .unwrap_or_else(|| panic!("hosted in {kinds}"));
    let fields: Vec<&str> = hosted["provider_schema"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["name"].as_str()).collect())
        .unwrap_or_default();
    for f in ["runtime", "etcd_endpoints", "versions"] {
        assert!(fields.contains(&f), "{f} in {hosted}");
    }

    let provider = hosted_provider(&etcd, &apiserver, &cm);
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/providers",
        Some(provider),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(
        !body.to_string().contains("PRIVATE KEY"),
        "secrets never come back: {body}"
    );
    let template = json!({"name": "hosted", "provider": "shared", "tenants": ["team-a"]});
    let (status, body) = call(
        &olga,
        &app,
        Method::POST,
        "/api/v1/templates",
        Some(template),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let req = json!({"tenant": "team-a", "name": "dev", "template": "hosted",
        "parameters": {"kubernetes_version": "1.20"}});
    let (status, body) = call(&amy, &app, Method::POST, "/api/v1/clusters", Some(req)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    let ready = wait_for_state(&app, &amy, &id, "ready").await;
    assert!(
        ready["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:"),
        "{ready}"
    );

    // An inventory sync measures the etcd key space: operators see it, members do not.
    let sync = format!("/api/v1/clusters/{id}/inventory/sync");
    let (status, body) = call(&olga, &app, Method::POST, &sync, None).await;
    assert!(status.is_success(), "{status} {body}");
    let (_, detail) = call(
        &olga,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert!(
        detail["shared_storage"]["keys"].as_u64().unwrap() > 20,
        "{detail}"
    );
    assert_eq!(detail["shared_storage"]["writable"], true);
    let (_, mine) = call(
        &amy,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert!(mine.get("shared_storage").is_none(), "{mine}");
    let page = app
        .get_as(&olga, &format!("/clusters/{id}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("id=\"shared-storage\""),
        "the cluster page shows it"
    );

    // The tenant's storage quota: below what the cluster keeps, the next inventory round
    // makes it read-only; the fleet API and dashboard show it to operators only. Removed,
    // write access is back at the round after.
    let quota = "/api/v1/tenants/team-a/quota";
    let tiny = json!({"max_shared_storage_bytes": 4096});
    let (status, body) = call(&olga, &app, Method::PUT, quota, Some(tiny)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let round = || app.on_server(|s| async move { s.kqueen.fleet().sync_inventory().await });
    round().await.unwrap();
    let (_, fleet) = call(&olga, &app, Method::GET, "/api/v1/fleet", None).await;
    let row = &fleet["items"][0];
    assert_eq!(row["shared_storage"]["writable"], false, "{fleet}");
    assert!(
        row["shared_storage"]["bytes"].as_u64().unwrap() > 4096,
        "{row}"
    );
    let storage = &fleet["storage"][0];
    assert_eq!(
        (
            &storage["tenant"],
            &storage["quota_bytes"],
            &storage["writable"]
        ),
        (&json!("team-a"), &json!(4096), &json!(false)),
        "{fleet}"
    );
    let ada = app.user("ada", false, &[("team-a", "admin")]).await;
    let (status, theirs) = call(&ada, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(status, StatusCode::OK, "{theirs}");
    assert!(
        theirs["items"][0]["name"] == "dev" && theirs["items"][0].get("shared_storage").is_none(),
        "{theirs}"
    );
    assert_eq!(theirs["storage"], json!([]), "operators only");
    let page = app.get_as(&olga, "/fleet").await.text().await.unwrap();
    assert!(page.contains(r#"id="fleet-storage""#), "the tenant table");
    assert!(page.contains(r#"id="chart-storage""#), "the chart");
    assert!(
        page.contains(">read-only</span>"),
        "the cluster's etcd column"
    );
    let (_, q) = call(&amy, &app, Method::GET, quota, None).await;
    assert!(
        q["used_shared_storage_bytes"].as_u64().unwrap() > 4096,
        "{q}"
    );
    let (status, _) = call(&olga, &app, Method::PUT, quota, Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    round().await.unwrap();
    let (_, fleet) = call(&olga, &app, Method::GET, "/api/v1/fleet", None).await;
    assert_eq!(
        fleet["items"][0]["shared_storage"]["writable"], true,
        "{fleet}"
    );

    // kubectl with `kqueen get-token` as its credential plugin: amy as her own
    // ServiceAccount, olga with the cluster's admin client certificate.
    if let Some(kubectl) = crate::cli::kubectl() {
        let checks = [
            (&amy, ["get", "configmaps", "-n", "default"]),
            (&olga, ["get", "secrets", "-n", "kube-system"]),
        ];
        for (who, check) in checks {
            let laptop = Laptop::new();
            laptop.login(&app, who).await;
            let ran = laptop.kqueen(&["kubeconfig", &id, "--exec"]).await;
            assert_eq!(ran.code, 0, "{ran:?}");
            let ran = laptop.kubectl_once_allowed(&kubectl, &check).await;
            assert_eq!(ran.code, 0, "{ran:?}");
        }
    }

    let join = format!("/api/v1/clusters/{id}/join");
    let (status, body) = call(&amy, &app, Method::GET, &join, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let command = body["command"].as_str().unwrap().to_owned();
    assert!(command.starts_with("kubeadm join 127.0.0.1:"), "{command}");
    assert!(
        command.contains("--discovery-token-ca-cert-hash sha256:"),
        "{command}"
    );
    let html = app
        .get_as(&amy, &format!("/clusters/{id}/join"))
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains(&command), "the page shows the same command");
    let cluster_page = app
        .get_as(&amy, &format!("/clusters/{id}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(cluster_page.contains("id=\"join-link\""));
    let token = body["token_id"].as_str().unwrap();
    let revoke = format!("{join}/{token}");
    let (status, _) = call(&amy, &app, Method::DELETE, &revoke, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&amy, &app, Method::DELETE, &revoke, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _) = call(
        &amy,
        &app,
        Method::DELETE,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    for _ in 0..300 {
        let (status, _) = call(
            &amy,
            &app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        if status == StatusCode::NOT_FOUND {
            app.stop().await;
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the hosted cluster was not deleted");
}

/// A `kqueen serve` process and what it printed.
struct Portal {
    child: std::process::Child,
    url: String,
    password: Option<String>,
}

fn serve(data_dir: &std::path::Path) -> Portal {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kqueen"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KQUEEN_DATA_DIR", data_dir)
        .env("KQUEEN_LISTEN", "127.0.0.1:0")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let (mut url, mut password, mut log) = (None, None, String::new());
    while url.is_none() {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{log}"));
        log.push_str(&line);
        log.push('\n');
        if let Some(p) = line.trim().strip_prefix("password: ") {
            password = Some(p.to_owned());
        }
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            url = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    Portal {
        child,
        url: url.unwrap(),
        password,
    }
}

#[tokio::test]
async fn a_hosted_cluster_survives_a_killed_portal() {
    let Some((apiserver, cm)) = binaries() else {
        return;
    };
    let etcd = TlsEtcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_kqueen"))
        .args(["tenant", "create", "team-a"])
        .env_clear()
        .env("KQUEEN_DATA_DIR", dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let mut portal = serve(dir.path());
    let _guard = kqueen_testkit::process::KillOnDrop(dir.path().join("work"));

    // The first-start operator signs in and makes an API token.
    let mut origin = reqwest::header::HeaderMap::new();
    origin.insert(reqwest::header::ORIGIN, portal.url.parse().unwrap());
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(origin)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let password = portal.password.clone().unwrap();
    let res = browser
        .post(format!("{}/auth/local", portal.url))
        .form(&[
            ("username", "admin"),
            ("password", password.as_str()),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let created: serde_json::Value = browser
        .post(format!("{}/api/v1/tokens", portal.url))
        .json(&json!({"name": "test", "days": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = created["secret"].as_str().unwrap().to_owned();
    let api = |url: &str, method: Method, path: &str, body: Option<serde_json::Value>| {
        let mut req = reqwest::Client::new()
            .request(method, format!("{url}{path}"))
            .bearer_auth(&token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status();
            let text = res.text().await.unwrap();
            (
                status,
                serde_json::from_str::<serde_json::Value>(&text).unwrap_or(json!(text)),
            )
        }
    };

    let provider = hosted_provider(&etcd, &apiserver, &cm);
    let url = portal.url.clone();
    let (status, body) = api(&url, Method::POST, "/api/v1/providers", Some(provider)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let template = json!({"name": "hosted", "provider": "shared"});
    let (status, body) = api(&url, Method::POST, "/api/v1/templates", Some(template)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let req = json!({"tenant": "team-a", "name": "dev", "template": "hosted"});
    let (status, body) = api(&url, Method::POST, "/api/v1/clusters", Some(req)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    let cluster = format!("/api/v1/clusters/{id}");
    let started = std::time::Instant::now();
    loop {
        let (_, body) = api(&url, Method::GET, &cluster, None).await;
        if body["state"] == "ready" {
            break;
        }
        assert_ne!(body["state"], "error", "{body}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(90),
            "{body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let (status, yaml) = api(&url, Method::GET, &format!("{cluster}/kubeconfig"), None).await;
    assert_eq!(status, StatusCode::OK);
    // A hosted cluster's admin kubeconfig is JSON (which is YAML): it arrives parsed here.
    let text = yaml
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| yaml.to_string());
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(&text, None, false).unwrap();
    let kube = kqueen_core::kubernetes::client(&parsed, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let namespaces = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(kube);
    let ns = serde_json::from_value(json!({"metadata": {"name": "survives"}})).unwrap();
    namespaces.create(&Default::default(), &ns).await.unwrap();

    // SIGKILL: the portal is gone at once; the control plane goes on serving.
    portal.child.kill().unwrap();
    portal.child.wait().unwrap();
    assert!(namespaces.get("survives").await.is_ok());

    // Started again: the cluster is Ready, its processes adopted, its data there.
    let mut portal = serve(dir.path());
    let url = portal.url.clone();
    let started = std::time::Instant::now();
    loop {
        let (_, events) = api(&url, Method::GET, &format!("{cluster}/events"), None).await;
        let adopted = events.as_array().is_some_and(|e| {
            e.iter()
                .any(|e| e["message"].as_str().is_some_and(|m| m.contains("adopted")))
        });
        if adopted {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{events}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (_, body) = api(&url, Method::GET, &cluster, None).await;
    assert_eq!(body["state"], "ready", "{body}");
    assert!(namespaces.get("survives").await.is_ok());

    let (status, _) = api(&url, Method::DELETE, &cluster, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let started = std::time::Instant::now();
    while api(&url, Method::GET, &cluster, None).await.0 != StatusCode::NOT_FOUND {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "not deleted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    portal.child.kill().unwrap();
    portal.child.wait().unwrap();
}
