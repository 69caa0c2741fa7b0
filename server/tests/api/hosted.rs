//! Hosted clusters through /api/v1 and the portal, with the real kube-apiserver and
//! kube-controller-manager (`KQUEEN_TEST_KUBE_APISERVER`, `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER`)
//! on a real etcd with TLS, client certificates and auth on: an operator defines a hosted
//! provider and a template, a member requests a cluster that reaches Ready, gets the join
//! command on the API and the page, revokes the token, and deletes the cluster.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::clusters::{call, wait_for_state};
use crate::helpers::TestApp;
use kqueen_testkit::tls_etcd::TlsEtcd;

#[tokio::test]
#[allow(clippy::print_stdout)]
async fn members_get_hosted_clusters_and_their_join_command() {
    let (Ok(apiserver), Ok(cm)) = (
        std::env::var("KQUEEN_TEST_KUBE_APISERVER"),
        std::env::var("KQUEEN_TEST_KUBE_CONTROLLER_MANAGER"),
    ) else {
        println!(
            "skipped: KQUEEN_TEST_KUBE_APISERVER and _CONTROLLER_MANAGER name the real binaries"
        );
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

    let root = etcd.root_access();
    let client_ca = etcd.client_ca.cert_key();
    let text = |s: &kqueen_core::vault::Secret| String::from_utf8(s.expose().to_vec()).unwrap();
    let provider = json!({"name": "shared", "kind": "hosted", "settings": {
        "etcd_endpoints": etcd.endpoint,
        "etcd_ca": root.server_ca_pem,
        "etcd_client_ca": client_ca.cert_pem,
        "etcd_client_ca_key": text(&client_ca.key_pem),
        "etcd_admin_cert": root.client.cert_pem,
        "etcd_admin_key": text(&root.client.key_pem),
        "versions": format!("1.20 {apiserver} {cm}"),
    }});
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
