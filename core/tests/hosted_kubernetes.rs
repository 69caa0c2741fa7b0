//! The `hosted` provisioner's `kubernetes` runtime (the Kamaji design) against a real
//! kube-apiserver as the admin cluster (`KQUEEN_TEST_KUBE_APISERVER`, with
//! kube-controller-manager running only the namespace and garbage collector controllers, so
//! that nothing but this test writes the Deployment's status): a member's hosted cluster gets
//! its Namespace, Secret, Deployment and Service with the right fields and owner labels,
//! applied by field manager `kqueen`; the cluster waits until the test, playing the kubelet,
//! runs the pod's containers as processes (the real binaries, with the Secret's files) and
//! reports them available; the admin kubeconfig then works; an upgrade rolls the image and
//! keeps the data; delete removes the Namespace with everything in it and the key space.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_core::engine::EngineConfig;
use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd};
use kqueen_core::identity::GroupMap;
use kqueen_core::provisioner::hosted::kubernetes as runtime;
use kqueen_core::provisioner::hosted::{HostedOptions, HostedProvisioner};
use kqueen_core::provisioner::Registry;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, Patch, PatchParams, PostParams};
use support::apiserver::{RealApiServer, CONTROLLER_MANAGER_ENV, ENV};
use support::kube_client::client_of;

/// Waits (the engine runs in the background) until `done` says so, within 90 s.
async fn wait_until<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if done().await {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "never: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn state_of(k: &Kqueen, id: &str) -> Option<ClusterState> {
    let ops = Actor::cli(Some("ops".into()));
    match k.clusters().cluster_detail(&ops, id).await {
        Ok(d) => {
            assert_ne!(
                d.cluster.state,
                ClusterState::Error,
                "{:?}\n{:#?}",
                d.cluster.error,
                d.events
            );
            Some(d.cluster.state)
        }
        Err(kqueen_core::Error::NotFound(_)) => None,
        Err(e) => panic!("{e}"),
    }
}

/// The test's kubelet: runs the control-plane pod's containers as processes of this host
/// with the Secret's files (the pod listens on the Service's node port itself, as the
/// NodePort runtime has it), and reports the Deployment's pods available.
struct Kubelet {
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Kubelet {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            children: Vec::new(),
        }
    }

    /// What the pod sees, as this host has it: the Secret's volume is a directory here,
    /// and the pod's "every address" is loopback.
    fn localize(&self, text: &str) -> String {
        text.replace(runtime::PKI_DIR, &self.dir.path().display().to_string())
            .replace("--bind-address=0.0.0.0", "--bind-address=127.0.0.1")
    }

    /// Starts the pod's containers (again) from the Deployment and the Secret as they are.
    async fn run_pod(&mut self, admin: &kube::Client, ns: &str) {
        self.stop();
        let secret = Api::<Secret>::namespaced(admin.clone(), ns)
            .get(runtime::PKI_SECRET)
            .await
            .unwrap();
        for (name, body) in secret.data.unwrap() {
            let text = self.localize(std::str::from_utf8(&body.0).unwrap());
            std::fs::write(self.dir.path().join(name), text).unwrap();
        }
        let deployment = Api::<Deployment>::namespaced(admin.clone(), ns)
            .get(runtime::DEPLOYMENT)
            .await
            .unwrap();
        let pod = deployment.spec.unwrap().template.spec.unwrap();
        for container in pod.containers {
            let binary = match container.name.as_str() {
                "kube-apiserver" => std::env::var(ENV).unwrap(),
                "kube-controller-manager" => std::env::var(CONTROLLER_MANAGER_ENV).unwrap(),
                "kube-scheduler" => std::env::var("KQUEEN_TEST_KUBE_SCHEDULER").unwrap(),
                other => panic!("unexpected container {other}"),
            };
            let args: Vec<String> = container
                .args
                .unwrap()
                .iter()
                .map(|a| self.localize(a))
                .collect();
            let log =
                std::fs::File::create(self.dir.path().join(format!("{}.log", container.name)))
                    .unwrap();
            let child = Command::new(binary)
                .args(args)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            self.children.push(child);
        }
    }

    /// Reports every replica of the Deployment's current generation updated and available.
    async fn report_available(&self, admin: &kube::Client, ns: &str) {
        let deployments = Api::<Deployment>::namespaced(admin.clone(), ns);
        let d = deployments.get(runtime::DEPLOYMENT).await.unwrap();
        let want = d.spec.unwrap().replicas.unwrap();
        let status = serde_json::json!({"status": {
            "observedGeneration": d.metadata.generation,
            "replicas": want,
            "updatedReplicas": want,
            "readyReplicas": want,
            "availableReplicas": want,
            "conditions": [{"type": "Available", "status": "True",
                            "reason": "MinimumReplicasAvailable"}],
        }});
        deployments
            .patch_status(
                runtime::DEPLOYMENT,
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await
            .unwrap();
    }

    fn stop(&mut self) {
        for mut child in self.children.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log(&self, container: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{container}.log")))
            .unwrap_or_default()
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop();
    }
}

fn labels_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<(String, String)> {
    meta.labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

fn assert_owned(
    what: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    cluster: &str,
) {
    let labels = labels_of(meta);
    for (key, value) in [
        ("app.kubernetes.io/managed-by", "kqueen"),
        (runtime::CLUSTER_LABEL, cluster),
        (runtime::TENANT_LABEL, "team-a"),
    ] {
        assert!(
            labels.contains(&(key.to_owned(), value.to_owned())),
            "{what}: {labels:?}"
        );
    }
    let managers: Vec<String> = meta
        .managed_fields
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f.operation.as_deref() == Some("Apply"))
        .filter_map(|f| f.manager)
        .collect();
    assert_eq!(
        managers,
        ["kqueen"],
        "{what}: applied server-side by kqueen"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_control_plane_runs_as_a_deployment_of_the_admin_cluster() {
    if std::env::var(CONTROLLER_MANAGER_ENV).is_err() {
        println!("skipped: {CONTROLLER_MANAGER_ENV} not set (the kubelet of this test runs it)");
        return;
    }
    let Some(admin_cluster) =
        RealApiServer::start_with_controllers("namespace,garbagecollector").await
    else {
        return;
    };
    let etcd = TlsEtcd::start().await;
    let db = kqueen_testkit::TestDatabase::sqlite();
    let work = tempfile::tempdir().unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::new(HostedProvisioner::new(HostedOptions::default())));
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_registry(registry)
        .with_group_map(GroupMap::parse("team-a=team-a:member").unwrap());
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let ops = Actor::cli(Some("ops".into()));

    // The operator: a hosted provider of runtime kubernetes on the shared etcd, exposing API
    // servers as NodePort Services on 127.0.0.1, two versions (images).
    let admin_kubeconfig = admin_cluster.admin_kubeconfig();
    let versions = "1.20 images.test/kube-apiserver:v1.20.2 images.test/kube-controller-manager:v1.20.2\n\
                    1.21 images.test/kube-apiserver:v1.21.14 images.test/kube-controller-manager:v1.21.14\n";
    let mut settings = etcd.provider_settings();
    for (field, value) in [
        ("runtime", "kubernetes"),
        ("versions", versions),
        ("address", "127.0.0.1"),
        ("admin_kubeconfig", admin_kubeconfig.as_str()),
        ("service_type", "NodePort"),
        ("replicas", "2"),
    ] {
        settings.push((field, value.to_owned()));
    }
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("hosted", "kamaji-like", &settings),
        ("hosted-ha", ""),
    )
    .await;

    let (cluster, _) = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "prod".into(),
                template: "hosted-ha".into(),
                parameters: [("kubernetes_version".to_owned(), "1.20".to_owned())].into(),
            },
        )
        .await
        .unwrap();
    let id = cluster.id.to_string();
    let mut config = EngineConfig::new(work.path().join("clusters"));
    config.poll_interval = Duration::from_millis(50);
    // In the background: an operation runs until its end, waiting included.
    let (stop_engine, shutdown) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(k.engine(config).run(shutdown));
    let admin = client_of(admin_kubeconfig.as_bytes(), Duration::from_secs(5)).await;
    let ns = runtime::namespace(cluster.id);
    let deployments = Api::<Deployment>::namespaced(admin.clone(), &ns);

    // The objects, once the Deployment is there.
    wait_until("the Deployment is applied", || async {
        deployments
            .get_opt(runtime::DEPLOYMENT)
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let namespace = Api::<Namespace>::all(admin.clone()).get(&ns).await.unwrap();
    assert_owned("Namespace", &namespace.metadata, &id);
    let service = Api::<Service>::namespaced(admin.clone(), &ns)
        .get(runtime::SERVICE)
        .await
        .unwrap();
    assert_owned("Service", &service.metadata, &id);
    let service_spec = service.spec.unwrap();
    assert_eq!(service_spec.type_.as_deref(), Some("NodePort"));
    let port = &service_spec.ports.unwrap()[0];
    assert_eq!((port.port, port.name.as_deref()), (6443, Some("https")));
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("https".into()))
    );
    let node_port = u16::try_from(port.node_port.unwrap()).unwrap();
    let selector = service_spec.selector.unwrap();
    assert_eq!(selector.get(runtime::CLUSTER_LABEL), Some(&id));
    let secret = Api::<Secret>::namespaced(admin.clone(), &ns)
        .get(runtime::PKI_SECRET)
        .await
        .unwrap();
    assert_owned("Secret", &secret.metadata, &id);
    let files: Vec<String> = secret.data.clone().unwrap().into_keys().collect();
    for file in [
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "etcd-client.crt",
        "etcd-client.key",
        "etcd-ca.crt",
        "sa.key",
        "sa.pub",
        "front-proxy-ca.crt",
        "controller-manager.kubeconfig",
    ] {
        assert!(files.contains(&file.to_owned()), "{file} in {files:?}");
    }
    let deployment = deployments.get(runtime::DEPLOYMENT).await.unwrap();
    assert_owned("Deployment", &deployment.metadata, &id);
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.selector
            .match_labels
            .unwrap()
            .get(runtime::CLUSTER_LABEL),
        Some(&id)
    );
    let template_labels = spec.template.metadata.unwrap().labels.unwrap();
    for (key, value) in selector {
        assert_eq!(
            template_labels.get(&key),
            Some(&value),
            "the Service selects the pods"
        );
    }
    let pod = spec.template.spec.unwrap();
    let container = |name: &str| {
        pod.containers
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no container {name}"))
            .clone()
    };
    let apiserver = container("kube-apiserver");
    assert_eq!(
        apiserver.image.as_deref(),
        Some("images.test/kube-apiserver:v1.20.2")
    );
    let args = apiserver.args.unwrap();
    for arg in [
        format!("--etcd-servers={}", etcd.endpoint),
        format!(
            "--etcd-prefix={}",
            KeySpace::for_cluster(cluster.id).prefix()
        ),
        "--etcd-compaction-interval=0".to_owned(),
        // Where the tenant's nodes reach it: the node address and the node port.
        "--advertise-address=127.0.0.1".to_owned(),
        format!("--secure-port={node_port}"),
        "--authorization-mode=Node,RBAC".to_owned(),
        "--enable-bootstrap-token-auth=true".to_owned(),
        format!("--client-ca-file={}/ca.crt", runtime::PKI_DIR),
    ] {
        assert!(args.contains(&arg), "{arg} in {args:?}");
    }
    assert_eq!(
        apiserver.ports.clone().unwrap()[0].container_port,
        i32::from(node_port),
        "the Service's target port https is the node port"
    );
    let pod_security = pod.security_context.clone().unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert_eq!(
        pod_security.seccomp_profile.unwrap().type_,
        "RuntimeDefault"
    );
    assert!(apiserver.readiness_probe.unwrap().http_get.is_some());
    let controller_manager = container("kube-controller-manager");
    assert_eq!(
        controller_manager.image.as_deref(),
        Some("images.test/kube-controller-manager:v1.20.2")
    );
    assert!(
        controller_manager
            .args
            .unwrap()
            .contains(&"--leader-elect=true".to_owned()),
        "two replicas elect a leader"
    );
    let scheduler = container("kube-scheduler");
    assert_eq!(
        scheduler.image.as_deref(),
        Some("images.test/kube-scheduler:v1.20.2"),
        "found beside the controller manager's image"
    );
    assert!(scheduler
        .args
        .unwrap()
        .contains(&"--leader-elect=true".to_owned()));
    let volume = &pod.volumes.unwrap()[0];
    assert_eq!(
        volume.secret.as_ref().unwrap().secret_name.as_deref(),
        Some(runtime::PKI_SECRET)
    );

    // The status is followed: no pod runs yet, so the cluster is not Ready.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(state_of(&k, &id).await, Some(ClusterState::Provisioning));
    let events = k.clusters().cluster_detail(&ops, &id).await.unwrap().events;
    assert!(
        events
            .iter()
            .any(|e| e.message.contains("has not started the control plane yet")),
        "{events:#?}"
    );

    // The kubelet runs the pod and reports it: Ready, and the admin kubeconfig works.
    let mut kubelet = Kubelet::new();
    kubelet.run_pod(&admin, &ns).await;
    kubelet.report_available(&admin, &ns).await;
    wait_until("Ready", || async {
        state_of(&k, &id).await == Some(ClusterState::Ready)
    })
    .await;
    let tenant_admin = k.access().admin_kubeconfig(&ops, &id).await.unwrap();
    let tenant_admin = client_of(tenant_admin.yaml.expose(), Duration::from_secs(5)).await;
    let kept: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "kept"}})).unwrap();
    Api::<Namespace>::all(tenant_admin.clone())
        .create(&PostParams::default(), &kept)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", kubelet.log("kube-apiserver")));
    let detail = k.clusters().cluster_detail(&ops, &id).await.unwrap();
    assert_eq!(
        detail.cluster.endpoint.as_deref(),
        Some(format!("https://127.0.0.1:{node_port}").as_str())
    );

    // Upgrade: the image rolls; the cluster waits for the new pods, then the data is there.
    k.clusters()
        .upgrade_cluster(&ops, &id, "1.21")
        .await
        .unwrap();
    wait_until("the new image is applied", || async {
        let d = deployments.get(runtime::DEPLOYMENT).await.unwrap();
        d.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .as_deref()
            == Some("images.test/kube-apiserver:v1.21.14")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(state_of(&k, &id).await, Some(ClusterState::Updating));
    kubelet.run_pod(&admin, &ns).await;
    kubelet.report_available(&admin, &ns).await;
    wait_until("Ready after the upgrade", || async {
        state_of(&k, &id).await == Some(ClusterState::Ready)
    })
    .await;
    Api::<Namespace>::all(tenant_admin.clone())
        .get("kept")
        .await
        .unwrap();

    // Delete: the Namespace goes with everything in it (the namespace controller empties
    // it), then the key space.
    kubelet.stop();
    k.clusters().delete_cluster(&ops, &id).await.unwrap();
    wait_until("deleted", || async { state_of(&k, &id).await.is_none() }).await;
    assert!(Api::<Namespace>::all(admin.clone())
        .get_opt(&ns)
        .await
        .unwrap()
        .is_none());
    for kind in [
        deployments
            .get_opt(runtime::DEPLOYMENT)
            .await
            .unwrap()
            .is_some(),
        Api::<Service>::namespaced(admin.clone(), &ns)
            .get_opt(runtime::SERVICE)
            .await
            .unwrap()
            .is_some(),
        Api::<Secret>::namespaced(admin.clone(), &ns)
            .get_opt(runtime::PKI_SECRET)
            .await
            .unwrap()
            .is_some(),
    ] {
        assert!(!kind, "nothing is left in the admin cluster");
    }
    let shared = SharedEtcd::connect(&etcd.root_access(), Duration::from_secs(5))
        .await
        .unwrap();
    let space = KeySpace::for_cluster(cluster.id);
    assert_eq!(shared.usage(&space).await.unwrap().keys, 0);
    assert_eq!(shared.writable(&space).await.unwrap(), None);
    stop_engine.send(true).unwrap();
    engine.await.unwrap();
}
