//! Hosted control planes benchmark, with the real kube-apiserver and kube-controller-manager
//! named by `KQUEEN_TEST_KUBE_APISERVER` and `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER`, on a
//! real etcd with TLS, client certificates and auth on. It prints:
//! - the etcd set-up of one control plane (key space role, user, grant) alone,
//! - the PKI of one control plane,
//! - request → API server ready through the `hosted` provisioner's create (process runtime),
//!   one control plane after another (the binary's own start is the floor),
//! - memory: the resident set of each control plane's processes (API server, controller
//!   manager, scheduler) once N run at once
//!   (default 10, `KQUEEN_BENCH_CONTROL_PLANES`), and how many would fit in this host's RAM.
//!
//!   cargo bench -p kqueen-core --bench hosted
//!
//! A benchmark, not a test: it prints figures and never fails on them.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd};
use kqueen_core::hosted::pki::{self, PkiRequest};
use kqueen_core::provisioner::hosted::{HostedOptions, HostedProvisioner};
use kqueen_core::provisioner::{ClusterVault, OpContext, Provisioner, Step};
use kqueen_core::vault::{Keyring, Vault};
use kqueen_testkit::tls_etcd::TlsEtcd;

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<44} n={:<3} p50 {:>8.1} ms   p95 {:>8.1} ms   max {:>8.1} ms",
        samples.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn mem_total_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let (Ok(apiserver), Ok(cm)) = (
        std::env::var("KQUEEN_TEST_KUBE_APISERVER"),
        std::env::var("KQUEEN_TEST_KUBE_CONTROLLER_MANAGER"),
    ) else {
        println!("skipped: KQUEEN_TEST_KUBE_APISERVER and _CONTROLLER_MANAGER name the binaries");
        return;
    };
    let count: usize = std::env::var("KQUEEN_BENCH_CONTROL_PLANES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let etcd = TlsEtcd::start().await;
    let root = etcd.root_access();
    let admin = SharedEtcd::connect(&root, Duration::from_secs(5))
        .await
        .unwrap();

    let mut samples = Vec::new();
    for i in 0..50 {
        let space = KeySpace::new(&format!("bench-{i}")).unwrap();
        let t = Instant::now();
        admin.open(&space).await.unwrap();
        samples.push(t.elapsed());
        admin.remove(&space).await.unwrap();
    }
    summary("etcd key space: role, user, grant", samples);

    let mut samples = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        pki::generate(&PkiRequest::new("bench", vec!["127.0.0.1".into()])).unwrap();
        samples.push(t.elapsed());
    }
    summary("PKI of one control plane", samples);

    // Request -> ready through the provisioner, control plane after control plane.
    let work = tempfile::tempdir().unwrap();
    let db = kqueen_testkit::TestDatabase::sqlite();
    let store = std::sync::Arc::new(db.connect().await);
    let vault = Vault::new(Keyring::parse(&Keyring::generate_entry()).unwrap(), store);
    let hosted = HostedProvisioner::new(HostedOptions::default());
    let client_ca = etcd.client_ca.cert_key();
    let config: Vec<(&str, String)> = vec![
        ("etcd_endpoints", etcd.endpoint.clone()),
        ("etcd_ca", root.server_ca_pem.clone()),
        ("etcd_client_ca", client_ca.cert_pem.clone()),
        ("etcd_admin_cert", root.client.cert_pem.clone()),
        ("versions", format!("1.20 {apiserver} {cm}")),
    ];
    let tenant = uuid::Uuid::now_v7();
    let mut samples = Vec::new();
    let mut keys = Vec::new();
    for i in 0..count {
        let cluster = uuid::Uuid::now_v7();
        let mut ctx = OpContext::new(
            &format!("c{i}"),
            "bench",
            work.path().join(cluster.to_string()),
        );
        ctx.cluster_id = cluster;
        ctx.provider_config = config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        ctx.provider_secrets = [
            ("etcd_client_ca_key".to_owned(), client_ca.key_pem.clone()),
            ("etcd_admin_key".to_owned(), root.client.key_pem.clone()),
        ]
        .into();
        ctx.cluster_vault = Some(ClusterVault::new(vault.clone(), tenant, cluster));
        ctx.params = [("kubernetes_version".to_owned(), "1.20".to_owned())].into();
        let t = Instant::now();
        loop {
            match hosted.create(&mut ctx).await.unwrap() {
                Step::Done(()) => break,
                Step::Wait(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        samples.push(t.elapsed());
        keys.push(cluster.to_string());
    }
    summary("request -> API server ready (process)", samples);

    // Memory of the running control planes.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut per_plane = Vec::new();
    for key in &keys {
        let pids = hosted.supervisor().pids(key);
        per_plane.push(pids.values().map(|p| rss_kib(*p)).sum::<u64>());
    }
    let mean = per_plane.iter().sum::<u64>() / per_plane.len().max(1) as u64;
    let total = mem_total_kib();
    println!(
        "memory: {} control planes running; RSS per control plane (apiserver + controller \
         manager) mean {:.0} MiB, max {:.0} MiB",
        keys.len(),
        mean as f64 / 1024.0,
        *per_plane.iter().max().unwrap_or(&0) as f64 / 1024.0
    );
    if let Some(fit) = total.checked_div(mean) {
        println!(
            "         {:.0} GiB of RAM here would hold about {fit} control planes (RSS only, no headroom)",
            total as f64 / 1024.0 / 1024.0,
        );
    }
    for key in &keys {
        hosted.supervisor().stop(key).await;
    }
}
