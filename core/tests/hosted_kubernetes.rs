//! The `hosted` provisioner's `kubernetes` runtime (the Kamaji design) with a real node: the
//! admin cluster is itself a hosted cluster KQueen made (runtime `process`, with its
//! controllers and scheduler) that a real node (the test kit's node lab: containerd, the CNI
//! bridge, a kubelet v1.20 joined with `kubeadm join`) serves. A member's hosted cluster of
//! runtime `kubernetes` gets its Namespace, Secret, Deployment and Service in it with the
//! right fields and owner labels, applied by field manager `kqueen`; the node runs the
//! control-plane pods (kube-apiserver, kube-controller-manager, kube-scheduler from images
//! built of the real binaries, as the Deployment's non-root user with the Secret's files)
//! and the cluster becomes Ready when the admin cluster says they are available; the admin
//! kubeconfig then works through the Service's node port; the tenant's controller manager
//! and scheduler work; an upgrade rolls the pods to the new image and keeps the data; delete
//! removes the Namespace with everything in it and the key space.
//!
//! What is not real here: kube-proxy is not among `../shared/kube`'s binaries, so the node
//! port is forwarded by the lab's [`NodePort`] (kube-proxy's userspace mode); the shared etcd
//! listens on the lab's bridge, where the pods reach it (a real admin cluster reaches its
//! etcd over the network). The "1.21" images hold the same v1.20.2 binaries under a second
//! tag: a new image to roll to.
//!
//! Needs the binaries of `../shared/kube` and containers; skips with the reason otherwise.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service, ServiceAccount};
use kqueen_core::cluster::ClusterState;
use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd};
use kqueen_core::provisioner::hosted::kubernetes as runtime;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::node_lab::cluster::{join_until_ready, Binaries};
use kqueen_testkit::node_lab::{NodeLab, NodePort, NODE_NAME};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kqueen_testkit::wait::within;
use kube::api::{Api, PostParams};
use support::kube_client::client_of;

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

/// The cluster reaching `want` (`None`: gone), or why not: its state and what its pods say.
async fn reaches(
    k: &Kqueen,
    id: &str,
    want: Option<ClusterState>,
    pods: &Api<Pod>,
) -> Result<(), String> {
    let state = state_of(k, id).await;
    if state == want {
        return Ok(());
    }
    Err(format!("{state:?}; pods: {}", pods_say(pods).await))
}

/// Each pod's phase and its containers' states, for a failure's message.
async fn pods_say(pods: &Api<Pod>) -> String {
    let Ok(list) = pods.list(&Default::default()).await else {
        return "(no list)".into();
    };
    let mut said = Vec::new();
    for pod in list.items {
        let name = pod.metadata.name.unwrap_or_default();
        let status = pod.status.unwrap_or_default();
        let containers: Vec<String> = status
            .container_statuses
            .unwrap_or_default()
            .into_iter()
            .map(|c| format!("{} ready={} {:?}", c.name, c.ready, c.state))
            .collect();
        said.push(format!("{name} {:?} {containers:?}", status.phase));
    }
    said.join("\n")
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

/// The objects KQueen applied for the cluster (`id`) in the admin cluster: owned, shaped as
/// the runtime has them; the Service's node port.
async fn assert_objects(admin: &kube::Client, ns: &str, id: &str, etcd_endpoint: &str) -> u16 {
    let deployments = Api::<Deployment>::namespaced(admin.clone(), ns);
    let cluster_id: uuid::Uuid = id.parse().unwrap();
    let namespace = Api::<Namespace>::all(admin.clone()).get(ns).await.unwrap();
    assert_owned("Namespace", &namespace.metadata, id);
    let service = Api::<Service>::namespaced(admin.clone(), ns)
        .get(runtime::SERVICE)
        .await
        .unwrap();
    assert_owned("Service", &service.metadata, id);
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
    assert_eq!(selector.get(runtime::CLUSTER_LABEL), Some(&id.to_owned()));
    let secret = Api::<Secret>::namespaced(admin.clone(), ns)
        .get(runtime::PKI_SECRET)
        .await
        .unwrap();
    assert_owned("Secret", &secret.metadata, id);
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
    assert_owned("Deployment", &deployment.metadata, id);
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.selector
            .match_labels
            .unwrap()
            .get(runtime::CLUSTER_LABEL),
        Some(&id.to_owned())
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
        Some("kqueen.local/kube-apiserver:v1.20.2")
    );
    let args = apiserver.args.unwrap();
    for arg in [
        format!("--etcd-servers={}", etcd_endpoint),
        format!(
            "--etcd-prefix={}",
            KeySpace::for_cluster(cluster_id).prefix()
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
        Some("kqueen.local/kube-controller-manager:v1.20.2")
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
        Some("kqueen.local/kube-scheduler:v1.20.2"),
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

    node_port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_control_plane_runs_as_pods_on_a_real_node_of_the_admin_cluster() {
    let Some(binaries) = Binaries::or_skip() else {
        return;
    };
    let Some(lab) = NodeLab::start().await else {
        return;
    };
    // Where the node's pods reach it: the lab's bridge.
    let etcd = TlsEtcd::start_on(lab.gateway()).await;
    let h = HostedKqueen::start(etcd, "team-a=team-a:member,platform=platform:member").await;
    let (k, ops, etcd) = (&h.k, &h.ops, &h.etcd);
    let alice = h.person("alice", "team-a").await;
    let olga = h.person("olga", "platform").await;
    // In the background: an operation runs until its end, waiting included.
    let (stop_engine, shutdown) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(k.engine(h.engine_config()).run(shutdown));

    // The admin cluster: a hosted cluster of runtime process, with the lab's node.
    let process_versions = binaries.process_versions();
    h.offer("shared", &[("versions", &process_versions)], ("hosted", ""))
        .await;
    let admin_id = h
        .request(&olga, ("platform", "admin", "hosted"), None)
        .await;
    let _processes = h.processes_of(&admin_id);
    within(Duration::from_secs(120), "admin cluster Ready", || async {
        (state_of(k, &admin_id).await == Some(ClusterState::Ready))
            .then_some(())
            .ok_or_else(|| "not yet".to_owned())
    })
    .await;
    let admin_kubeconfig = h.admin_kubeconfig(&admin_id).await;
    let admin = client_of(admin_kubeconfig.as_bytes(), Duration::from_secs(10)).await;
    let join = k.clusters().join_info(&olga, &admin_id).await.unwrap();
    join_until_ready(&lab, &join.command, &admin, Duration::from_secs(240))
        .await
        .unwrap();

    // The control plane's images, built of the real binaries; "1.21": the same under a
    // second tag.
    let versions = binaries.import_images(&lab, &[("1.20", "v1.20.2"), ("1.21", "v1.20.2-next")]);

    // The operator: a hosted provider of runtime kubernetes on the admin cluster, exposing
    // API servers as NodePort Services on 127.0.0.1, two replicas, two versions (images).
    h.offer_kubernetes_runtime("kamaji-like", &versions, &admin_kubeconfig, "hosted-ha")
        .await;
    let id = h
        .request(&alice, ("team-a", "prod", "hosted-ha"), Some("1.20"))
        .await;
    let cluster_id: uuid::Uuid = id.parse().unwrap();
    let ns = runtime::namespace(cluster_id);
    let deployments = Api::<Deployment>::namespaced(admin.clone(), &ns);
    let pods = Api::<Pod>::namespaced(admin.clone(), &ns);
    within(
        Duration::from_secs(90),
        "the Deployment applied",
        || async {
            match deployments.get_opt(runtime::DEPLOYMENT).await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    // Until its API servers answer, the cluster is not Ready.
    assert_eq!(state_of(k, &id).await, Some(ClusterState::Provisioning));
    let node_port = assert_objects(&admin, &ns, &id, &etcd.endpoint).await;
    let _node_port = NodePort::forward(admin.clone(), &ns, runtime::SERVICE, node_port)
        .await
        .unwrap();

    // The node runs the pods; the admin cluster says they are available: Ready.
    within(Duration::from_secs(240), "Ready", || {
        reaches(k, &id, Some(ClusterState::Ready), &pods)
    })
    .await;
    let events = k.clusters().cluster_detail(ops, &id).await.unwrap().events;
    assert!(
        events
            .iter()
            .any(|e| e.message.contains("control-plane pods available")
                || e.message.contains("has not started the control plane yet")),
        "the wait was followed: {events:#?}"
    );
    let running = pods.list(&Default::default()).await.unwrap().items;
    assert_eq!(running.len(), 2, "{}", pods_say(&pods).await);
    for pod in &running {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some(NODE_NAME));
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ready = status.container_statuses.as_ref().unwrap();
        assert_eq!(ready.len(), 3);
        assert!(ready.iter().all(|c| c.ready), "{ready:?}");
    }

    // The admin kubeconfig works through the node port, on the pods' API servers.
    let tenant_admin = k.access().admin_kubeconfig(ops, &id).await.unwrap();
    let tenant_admin = client_of(tenant_admin.yaml.expose(), Duration::from_secs(10)).await;
    let kept: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "kept"}})).unwrap();
    Api::<Namespace>::all(tenant_admin.clone())
        .create(&PostParams::default(), &kept)
        .await
        .unwrap();
    let detail = k.clusters().cluster_detail(ops, &id).await.unwrap();
    assert_eq!(
        detail.cluster.endpoint.as_deref(),
        Some(format!("https://127.0.0.1:{node_port}").as_str())
    );
    // The pods' controller manager gives the new namespace its service account; the
    // scheduler holds its lease.
    let accounts = Api::<ServiceAccount>::namespaced(tenant_admin.clone(), "kept");
    within(
        Duration::from_secs(60),
        "the controller manager works",
        || async {
            match accounts.get_opt("default").await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    let leases = Api::<Lease>::namespaced(tenant_admin.clone(), "kube-system");
    within(Duration::from_secs(60), "the scheduler leads", || async {
        match leases.get_opt("kube-scheduler").await {
            Ok(Some(l))
                if l.spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.as_ref())
                    .is_some() =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Upgrade: the pods roll to the new image (one new before one old goes); Ready again
    // when the admin cluster says so, with the data kept.
    k.clusters()
        .upgrade_cluster(ops, &id, "1.21")
        .await
        .unwrap();
    within(Duration::from_secs(60), "the new image applied", || async {
        let d = deployments
            .get(runtime::DEPLOYMENT)
            .await
            .map_err(|e| e.to_string())?;
        let image = d.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .clone();
        (image.as_deref() == Some("kqueen.local/kube-apiserver:v1.20.2-next"))
            .then_some(())
            .ok_or(format!("{image:?}"))
    })
    .await;
    assert_eq!(state_of(k, &id).await, Some(ClusterState::Updating));
    within(Duration::from_secs(240), "Ready after the upgrade", || {
        reaches(k, &id, Some(ClusterState::Ready), &pods)
    })
    .await;
    let rolled = pods.list(&Default::default()).await.unwrap().items;
    let images: Vec<Option<String>> = rolled
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| p.spec.as_ref().unwrap().containers[0].image.clone())
        .collect();
    assert_eq!(
        images,
        vec![Some("kqueen.local/kube-apiserver:v1.20.2-next".to_owned()); 2]
    );
    Api::<Namespace>::all(tenant_admin.clone())
        .get("kept")
        .await
        .unwrap();

    // Delete: the Namespace goes with everything in it (the node stops the pods, the
    // namespace controller empties it), then the key space.
    k.clusters().delete_cluster(ops, &id).await.unwrap();
    within(Duration::from_secs(240), "deleted", || {
        reaches(k, &id, None, &pods)
    })
    .await;
    assert!(Api::<Namespace>::all(admin.clone())
        .get_opt(&ns)
        .await
        .unwrap()
        .is_none());
    assert!(pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .is_empty());
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
    let space = KeySpace::for_cluster(cluster_id);
    assert_eq!(shared.usage(&space).await.unwrap().keys, 0);
    assert_eq!(shared.writable(&space).await.unwrap(), None);
    stop_engine.send(true).unwrap();
    engine.await.unwrap();
}
