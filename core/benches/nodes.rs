//! Real nodes benchmark: the test kit's node lab (containerd, the CNI bridge, a kubelet
//! v1.20.2) under clusters KQueen makes, with the real binaries of `../shared/kube`
//! (`eval "$(bash ../shared/kube/install.sh)"`) and containers (root, containerd, runc, the
//! CNI plugins). Each round starts from nothing and times:
//! - the node lab's start (containerd, the bridge, the pause and busybox images),
//! - a hosted cluster (runtime `process`): request → Ready,
//! - `kubeadm join` with the line KQueen shows, then the node → Ready,
//! - a 10-pod Deployment: apply → all available (the hosted scheduler, the real kubelet),
//! - the `kubernetes` runtime's three images (about 250 MB) built and imported,
//! - a hosted cluster of runtime `kubernetes` on that node (two control-plane pods):
//!   request → Ready, then an upgrade rolled over both pods → Ready.
//!
//!   cargo bench -p kqueen-core --bench nodes            (KQUEEN_BENCH_ROUNDS, default 3)
//!
//! A benchmark, not a test: it prints figures with the machine's load and never fails on
//! them (it stops, saying why, when a step does not happen within its time).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kqueen_core::cluster::ClusterState;
use kqueen_core::provisioner::hosted::kubernetes as runtime;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::node_lab::cluster::{join_until_ready, load, Binaries};
use kqueen_testkit::node_lab::{NodeLab, NodePort, BUSYBOX_IMAGE};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, PostParams};

const STEPS: [&str; 8] = [
    "node lab start (containerd, bridge, 2 images)",
    "hosted cluster (process): request -> Ready",
    "kubeadm join (discovery, TLS bootstrap)",
    "join done -> node Ready",
    "10-pod Deployment: apply -> available",
    "3 control-plane images built and imported",
    "runtime kubernetes: request -> Ready (2 pods)",
    "runtime kubernetes: upgrade -> Ready",
];

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<48} n={:<2} min {:>6.1} s   p50 {:>6.1} s   max {:>6.1} s",
        samples.len(),
        samples[0].as_secs_f64(),
        at(0.5).as_secs_f64(),
        samples[samples.len() - 1].as_secs_f64()
    );
}

/// Polls `check` every 250 ms until it holds, at most `limit`; the time it took.
async fn until<F, Fut>(limit: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(true) => return started.elapsed(),
            Err(e) => panic!("{what}: {e}"),
            Ok(false) if started.elapsed() > limit => panic!("{what}: not within {limit:?}"),
            Ok(false) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

async fn ready(k: &Kqueen, id: &str) -> Result<bool, String> {
    let ops = Actor::cli(Some("ops".into()));
    let detail = k
        .clusters()
        .cluster_detail(&ops, id)
        .await
        .map_err(|e| e.to_string())?;
    match detail.cluster.state {
        ClusterState::Error => Err(format!("{:?}", detail.cluster.error)),
        state => Ok(state == ClusterState::Ready),
    }
}

fn web() -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "web", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                    "command": ["/bin/busybox", "httpd", "-f", "-p", "8080"],
                }]},
            },
        },
    }))
    .unwrap()
}

/// One round from nothing; the time of each of [`STEPS`].
async fn round(binaries: &Binaries) -> Option<Vec<Duration>> {
    let mut took = Vec::new();
    let started = Instant::now();
    let lab = NodeLab::start().await?;
    took.push(started.elapsed());
    let h = HostedKqueen::start(
        TlsEtcd::start_on(lab.gateway()).await,
        "team-a=team-a:member",
    )
    .await;
    let (k, ops) = (&h.k, &h.ops);
    let alice = h.person("alice", "team-a").await;
    let (stop_engine, shutdown) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(k.engine(h.engine_config()).run(shutdown));

    let process_versions = binaries.process_versions();
    h.offer("shared", &[("versions", &process_versions)], ("hosted", ""))
        .await;
    let admin_id = h.request(&alice, ("team-a", "admin", "hosted"), None).await;
    let _processes = h.processes_of(&admin_id);
    took.push(
        until(Duration::from_secs(120), "admin Ready", || {
            ready(k, &admin_id)
        })
        .await,
    );
    let admin_kubeconfig = h.admin_kubeconfig(&admin_id).await;
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(&admin_kubeconfig, None, false).unwrap();
    let admin = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    let join = k.clusters().join_info(&alice, &admin_id).await.unwrap();
    let joined = join_until_ready(&lab, &join.command, &admin, Duration::from_secs(240))
        .await
        .unwrap();
    took.push(joined.join.took);
    took.push(joined.ready_after);

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "default");
    let started = Instant::now();
    deployments
        .create(&PostParams::default(), &web())
        .await
        .unwrap();
    until(Duration::from_secs(180), "10 pods", || async {
        let d = deployments.get("web").await.map_err(|e| e.to_string())?;
        Ok(d.status.and_then(|s| s.available_replicas) == Some(10))
    })
    .await;
    took.push(started.elapsed());
    deployments
        .delete("web", &Default::default())
        .await
        .unwrap();

    let started = Instant::now();
    let versions = binaries.import_images(&lab, &[("1.20", "v1.20.2"), ("1.21", "v1.20.2-next")]);
    took.push(started.elapsed());
    h.offer_kubernetes_runtime("pods", &versions, &admin_kubeconfig, "pods")
        .await;
    let started = Instant::now();
    let id = h
        .request(&alice, ("team-a", "tenant", "pods"), Some("1.20"))
        .await;
    let cluster_id: uuid::Uuid = id.parse().unwrap();
    let services = Api::<k8s_openapi::api::core::v1::Service>::namespaced(
        admin.clone(),
        &runtime::namespace(cluster_id),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let node_port = loop {
        let port = services
            .get_opt(runtime::SERVICE)
            .await
            .unwrap()
            .and_then(|s| s.spec?.ports?.first()?.node_port)
            .and_then(|p| u16::try_from(p).ok());
        match port {
            Some(port) => break port,
            None if Instant::now() > deadline => panic!("no node port within 60 s"),
            None => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    let _forward = NodePort::forward(
        admin.clone(),
        &runtime::namespace(cluster_id),
        runtime::SERVICE,
        node_port,
    )
    .await
    .unwrap();
    until(Duration::from_secs(240), "tenant Ready", || ready(k, &id)).await;
    took.push(started.elapsed());
    let started = Instant::now();
    k.clusters()
        .upgrade_cluster(ops, &id, "1.21")
        .await
        .unwrap();
    until(Duration::from_secs(60), "Updating", || async {
        let detail = k
            .clusters()
            .cluster_detail(ops, &id)
            .await
            .map_err(|e| e.to_string())?;
        Ok(detail.cluster.state != ClusterState::Ready)
    })
    .await;
    until(Duration::from_secs(240), "upgraded", || ready(k, &id)).await;
    took.push(started.elapsed());
    stop_engine.send(true).unwrap();
    engine.await.unwrap();
    Some(took)
}

#[tokio::main]
async fn main() {
    let Some(binaries) = Binaries::or_skip() else {
        return;
    };
    let rounds: usize = std::env::var("KQUEEN_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); STEPS.len()];
    for n in 1..=rounds {
        let Some(took) = round(&binaries).await else {
            return;
        };
        println!("round {n} of {rounds} done (load {})", load());
        for (step, t) in took.into_iter().enumerate() {
            samples[step].push(t);
        }
    }
    println!(
        "\nreal nodes, {rounds} rounds from nothing (load {} at the end)",
        load()
    );
    for (name, s) in STEPS.iter().zip(samples) {
        summary(name, s);
    }
}
