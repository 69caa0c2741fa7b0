//! The `hosted` provisioner end to end in the domain: an operator defines a hosted provider
//! on a shared etcd (TLS, client certificates, auth on) and a template; a tenant member
//! requests a cluster; the engine runs it to Ready with the real kube-apiserver and
//! kube-controller-manager (`KQUEEN_TEST_KUBE_APISERVER`, `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER`);
//! the admin kubeconfig and the member's personal kubeconfig work; an upgrade to another
//! offered version (a copy of the same binaries: one version is available here) keeps the
//! data; after a restart of KQueen the engine adopts the running control plane and
//! restarts its API server when killed; delete stops the processes and leaves no key,
//! role, user or sealed PKI behind.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_core::engine::EngineConfig;
use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd};
use kqueen_core::identity::GroupMap;
use kqueen_core::provisioner::hosted::{HostedOptions, HostedProvisioner};
use kqueen_core::provisioner::Registry;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::process::alive;
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, PostParams};
use support::converge::converge;
use support::kube_client::client_of;

const APISERVER: &str = "KQUEEN_TEST_KUBE_APISERVER";
const CONTROLLER_MANAGER: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";

#[tokio::test]
async fn a_member_gets_a_hosted_cluster_upgrades_it_and_deletes_it() {
    let (Ok(apiserver), Ok(cm)) = (std::env::var(APISERVER), std::env::var(CONTROLLER_MANAGER))
    else {
        println!("skipped: {APISERVER} and {CONTROLLER_MANAGER} name the real binaries");
        return;
    };
    let etcd = TlsEtcd::start().await;
    let db = kqueen_testkit::TestDatabase::sqlite();
    let work = tempfile::tempdir().unwrap();
    let hosted = Arc::new(HostedProvisioner::new(HostedOptions::default()));
    let mut registry = Registry::new();
    registry.register(hosted.clone());
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_registry(registry)
        .with_group_map(GroupMap::parse("team-a=team-a:member,team-b=team-b:member").unwrap());
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let bob = kqueen_testkit::people::login(&k, "bob", "team-b").await;
    let ops = Actor::cli(Some("ops".into()));

    // The operator: a provider on the shared etcd offering 1.20 and "1.21" (a copy).
    let copies = work.path().join("v121");
    std::fs::create_dir_all(&copies).unwrap();
    std::fs::copy(&apiserver, copies.join("kube-apiserver")).unwrap();
    std::fs::copy(&cm, copies.join("kube-controller-manager")).unwrap();
    // kube-scheduler is found beside the controller manager.
    let scheduler = std::path::Path::new(&cm).with_file_name("kube-scheduler");
    std::fs::copy(&scheduler, copies.join("kube-scheduler")).unwrap();
    let versions = format!(
        "1.20 {apiserver} {cm}\n1.21 {} {}\n",
        copies.join("kube-apiserver").display(),
        copies.join("kube-controller-manager").display()
    );
    let mut settings = etcd.provider_settings();
    settings.push(("versions", versions));
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("hosted", "shared", &settings),
        ("hosted-small", ""),
    )
    .await;

    // The member requests a cluster; an unknown version is refused at once.
    let request = |version: &str| ClusterRequest {
        tenant: Some("team-a".into()),
        name: "dev".into(),
        template: "hosted-small".into(),
        parameters: [("kubernetes_version".to_owned(), version.to_owned())].into(),
    };
    let refused = k.clusters().request_cluster(&alice, request("1.99")).await;
    assert!(
        matches!(&refused, Err(kqueen_core::Error::Invalid(v)) if v.to_string().contains("not offered")),
        "{refused:?}"
    );
    let (cluster, _) = k
        .clusters()
        .request_cluster(&alice, request("1.20"))
        .await
        .unwrap();
    let id = cluster.id.to_string();
    let _guard =
        kqueen_testkit::process::KillOnDrop(work.path().join("clusters").join(&id).join("run"));
    let mut config = EngineConfig::new(work.path().join("clusters"));
    config.poll_interval = Duration::from_millis(50);
    let engine = k.engine(config);
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;

    // The admin kubeconfig works; so does the member's personal one.
    let admin = k.access().admin_kubeconfig(&ops, &id).await.unwrap();
    let admin = client_of(admin.yaml.expose(), Duration::from_secs(5)).await;
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "kept"}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let mine = k.access().kubeconfig(&alice, &id).await.unwrap();
    let mine = client_of(mine.yaml.expose(), Duration::from_secs(5)).await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(mine, "kept");
    // Its RoleBinding is new: the API server's RBAC cache may take a moment to see it.
    let started = Instant::now();
    while let Err(e) = cms.list(&Default::default()).await {
        assert!(started.elapsed() < Duration::from_secs(15), "{e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Worker nodes: the join command with a bootstrap token, the same token when asked again;
    // another tenant's member does not even see the cluster.
    let join = k.clusters().join_info(&alice, &id).await.unwrap();
    assert_eq!(
        k.clusters().join_info(&alice, &id).await.unwrap().token,
        join.token
    );
    assert!(matches!(
        k.clusters().join_info(&bob, &id).await,
        Err(kqueen_core::Error::NotFound(_))
    ));
    let port = join.endpoint.rsplit(':').next().unwrap();
    assert_eq!(
        join.command,
        format!(
            "kubeadm join 127.0.0.1:{port} --token {} --discovery-token-ca-cert-hash {}",
            join.token, join.ca_cert_hash
        )
    );
    assert!(join.expires_at > chrono::Utc::now() + chrono::Duration::hours(23));
    // The hash is the CA's public key's, derived here from the CA's private key.
    let sealed = k
        .vault()
        .get(&kqueen_core::vault::names::cluster_provisioner_secret(
            cluster.tenant_id,
            cluster.id,
            "pki",
        ))
        .await
        .unwrap()
        .unwrap();
    let pki = kqueen_core::hosted::pki::ControlPlanePki::from_secret(&sealed).unwrap();
    let ca_key = rcgen_spki(std::str::from_utf8(pki.ca.key_pem.expose()).unwrap());
    assert_eq!(join.ca_cert_hash, format!("sha256:{ca_key}"));
    // What kubeadm reads before it has credentials: cluster-info, signed for the token by the
    // controller manager's bootstrap signer.
    let endpoint = format!("https://{}", join.endpoint);
    let anonymous = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(pki.ca.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let url = format!("{endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info");
    let started = Instant::now();
    loop {
        let body: serde_json::Value = anonymous
            .get(&url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if body["data"][format!("jws-kubeconfig-{}", join.token_id)].is_string() {
            assert!(body["data"]["kubeconfig"]
                .as_str()
                .unwrap()
                .contains(&endpoint));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not signed: {body}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The token authenticates as a bootstrapper: it reads kubeadm-config, not other maps.
    let as_token = |path: &str| {
        anonymous
            .get(format!("{endpoint}{path}"))
            .bearer_auth(&join.token)
            .send()
    };
    let config_map = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config";
    assert_eq!(as_token(config_map).await.unwrap().status(), 200);
    let all_maps = "/api/v1/namespaces/kube-system/configmaps";
    assert_eq!(as_token(all_maps).await.unwrap().status(), 403);
    // Revoked: it no longer authenticates.
    assert!(k
        .clusters()
        .revoke_join_token(&alice, &id, &join.token_id)
        .await
        .unwrap());
    let started = Instant::now();
    while as_token(config_map).await.unwrap().status() != 401 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still accepted"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(!k
        .clusters()
        .revoke_join_token(&alice, &id, &join.token_id)
        .await
        .unwrap());
    assert!(k
        .clusters()
        .revoke_join_token(&alice, &id, "../etc")
        .await
        .is_err());

    // The inventory sync measures the cluster's etcd key space; operators see it.
    let synced = k.fleet().sync_inventory().await.unwrap();
    assert!(synced.iter().all(|s| s.error.is_none()), "{synced:?}");
    let reading = k
        .clusters()
        .cluster_detail(&ops, &id)
        .await
        .unwrap()
        .shared_storage
        .expect("measured");
    assert!(reading.usage.keys > 20 && reading.usage.bytes > reading.usage.keys * 50);
    assert!(reading.usage.writable);
    let members_view = k.clusters().cluster_detail(&alice, &id).await.unwrap();
    assert!(members_view.shared_storage.is_none(), "operators only");

    let space = KeySpace::for_cluster(cluster.id);
    let root = etcd.root_access();
    let shared = SharedEtcd::connect(&root, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(shared.usage(&space).await.unwrap().keys > 20);

    // Upgrade to the other offered version: restarted, data kept.
    let pid_file = work
        .path()
        .join("clusters")
        .join(&id)
        .join("run/kube-apiserver.pid");
    let before: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    k.clusters()
        .upgrade_cluster(&ops, &id, "1.21")
        .await
        .unwrap();
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;
    let after: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(before, after);
    assert!(!alive(before));
    let cmdline = std::fs::read(format!("/proc/{after}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).contains("v121"));
    let names: Vec<String> = Api::<Namespace>::all(admin.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"kept".into()), "{names:?}");

    // KQueen restarts (another process: another supervisor, the same database and vault):
    // the engine's start adopts the running control plane, at the upgraded version.
    hosted.supervisor().release(&id).await;
    let hosted = Arc::new(HostedProvisioner::new(HostedOptions::default()));
    let mut registry = Registry::new();
    registry.register(hosted.clone());
    let k = Kqueen::new(k.store().clone())
        .with_vault(k.vault().clone())
        .with_registry(registry);
    let mut config = EngineConfig::new(work.path().join("clusters"));
    config.poll_interval = Duration::from_millis(50);
    let engine = k.engine(config);
    assert_eq!(engine.resume_clusters().await, 1);
    assert_eq!(
        hosted.supervisor().pids(&id)["kube-apiserver"],
        after,
        "adopted"
    );
    // The new supervisor restarts a killed API server.
    let victim = rustix::process::Pid::from_raw(i32::try_from(after).unwrap()).unwrap();
    rustix::process::kill_process(victim, rustix::process::Signal::KILL).unwrap();
    let started = Instant::now();
    let after = loop {
        let pid = hosted.supervisor().pids(&id)["kube-apiserver"];
        if pid != after && alive(pid) {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "not restarted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The timeline tells why, with the end of the API server's log, and the restart.
    let started = Instant::now();
    loop {
        let events = k.clusters().cluster_detail(&ops, &id).await.unwrap().events;
        let died = events.iter().any(|e| {
            e.kind == kqueen_core::cluster::EventKind::Error
                // Adopted: not KQueen's child any more, so no exit status.
                && e.message.starts_with("kube-apiserver exited (adopted")
                && e.message.contains("; its log ends:\n")
        });
        let restarted = events
            .iter()
            .any(|e| e.message == format!("kube-apiserver started (pid {after})"));
        if died && restarted {
            assert!(
                events.iter().any(|e| e.message.contains("adopted")),
                "{events:#?}"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{events:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let started = Instant::now();
    while Api::<Namespace>::all(admin.clone())
        .get("kept")
        .await
        .is_err()
    {
        assert!(started.elapsed() < Duration::from_secs(60), "not back");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // Delete: processes stopped, key space, role and user gone, sealed PKI removed.
    k.clusters().delete_cluster(&ops, &id).await.unwrap();
    converge(&k, &engine, &id, None).await;
    assert!(!alive(after));
    assert_eq!(shared.usage(&space).await.unwrap().keys, 0);
    assert_eq!(shared.writable(&space).await.unwrap(), None);
    let sealed =
        kqueen_core::vault::names::cluster_provisioner_secret(cluster.tenant_id, cluster.id, "pki");
    assert!(k.vault().get(&sealed).await.unwrap().is_none());
}

/// Hex SHA-256 of the public key (SubjectPublicKeyInfo DER) of a PEM private key.
fn rcgen_spki(private_pem: &str) -> String {
    use sha2::Digest;
    let public = kqueen_core::hosted::pki::public_key_of(private_pem).unwrap();
    let der = pem_body(&public);
    sha2::Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn pem_body(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}
