//! The node pool against a real kube-apiserver with its controllers and scheduler: two
//! machines join as Ready nodes and run pods; removing one stops its containers and
//! removes its cgroups; dropping the pool leaves no process, cgroup or bridge behind.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::node_lab::cluster::node_ready;
use kqueen_testkit::node_lab::pool::NodePool;
use kqueen_testkit::node_lab::BUSYBOX_IMAGE;
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

/// Whether some process's command line names `dir`.
fn runs_in(dir: &Path) -> bool {
    let marker = dir.display().to_string();
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
    })
}

/// The cgroup folders named after the pool (`/<id>n<N>` in any hierarchy).
fn cgroups_of(id: &str) -> Vec<String> {
    std::fs::read_dir("/sys/fs/cgroup")
        .unwrap()
        .flatten()
        .flat_map(|h| std::fs::read_dir(h.path()).into_iter().flatten().flatten())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.rsplit('/').next().is_some_and(|n| n.starts_with(id)))
        .collect()
}

async fn until<T>(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn pool_nodes_join_run_pods_and_leave_nothing_behind() {
    if let Some(why) = NodePool::unavailable() {
        println!("skipped: {why}");
        return;
    }
    let Some(mut kube) = RealApiServer::start().await else {
        return;
    };
    assert!(kube.start_scheduler(), "the scheduler runs");
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&kube.admin_kubeconfig(), None, false).unwrap();
    let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    let mut pool = NodePool::start(&kube.admin_kubeconfig(), "100m")
        .await
        .unwrap();
    let id = pool.id().to_owned();
    let (a, b) = (pool.add().unwrap(), pool.add().unwrap());
    assert_eq!((a.as_str(), b.as_str()), ("127.0.0.2", "127.0.0.3"));
    let (dir_a, dir_b) = (pool.dir_of(&a).unwrap(), pool.dir_of(&b).unwrap());
    assert!(!cgroups_of(&id).is_empty(), "each node has its cgroup root");

    let nodes: Api<Node> = Api::all(client.clone());
    until("both nodes Ready", Duration::from_secs(90), async || {
        let list = nodes.list(&ListParams::default()).await.ok()?;
        let ready = list.items.iter().filter(|n| node_ready(n)).count();
        (ready == 2).then_some(())
    })
    .await;
    let node = nodes.get(&a).await.unwrap();
    let addresses = node.status.unwrap().addresses.unwrap();
    assert!(
        addresses
            .iter()
            .any(|x| x.type_ == "InternalIP" && x.address == a),
        "{addresses:?}"
    );

    // A pod on each node, started by that node's kubelet.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for node in [&a, &b] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("on-{}", node.replace('.', "-"))},
            "spec": {"nodeName": node, "automountServiceAccountToken": false,
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                    "imagePullPolicy": "Never", "command": ["/bin/busybox", "sleep", "3600"]}]}}))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    until("both pods running", Duration::from_secs(60), async || {
        let list = pods.list(&ListParams::default()).await.ok()?;
        let running = list
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        (running == 2).then_some(())
    })
    .await;
    // Each node's pods are under its own cgroup root.
    assert!(
        cgroups_of(&id)
            .iter()
            .any(|c| c.ends_with("n2") && Path::new(c).join("kubepods").is_dir()),
        "{:?}",
        cgroups_of(&id)
    );

    // Removed, a node's processes and cgroups are gone; the other runs on.
    assert!(pool.remove(&a));
    assert!(!runs_in(&dir_a), "no process of {a} is left");
    assert!(
        cgroups_of(&id).iter().all(|c| !c.ends_with("n2")),
        "{:?}",
        cgroups_of(&id)
    );
    assert!(runs_in(&dir_b));
    assert_eq!(pool.names(), std::slice::from_ref(&b));

    drop(pool);
    assert!(!runs_in(&dir_b), "no process of {b} is left");
    assert_eq!(cgroups_of(&id), Vec::<String>::new());
    drop(kube);
}
