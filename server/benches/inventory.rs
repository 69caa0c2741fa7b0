//! Inventory benchmark. Fills the inventory with 100 clusters x 1,000 pods (synthetic
//! snapshots saved through the real store code, with the audit checks' findings), starts the
//! real server, and measures, one request at a time after a warm-up:
//! - the images query (first page, a substring search, a tenant admin's scope) in the core
//!   and on /api/v1/fleet/images,
//! - the fleet dashboard: GET /api/v1/fleet and the rendered /fleet page,
//!
//! on SQLite and, when it answers, on Postgres (127.0.0.1:5432). Target: p99 under 50 ms.
//! Then a full sync of N clusters (default 20) of 1,000 pods each against the in-process fake
//! Kubernetes API, with the configured concurrency (8).
//!
//!   cargo bench -p kqueen-server --bench inventory
//!   KQUEEN_BENCH_SAMPLES=500 KQUEEN_BENCH_SYNC_CLUSTERS=50 cargo bench -p kqueen-server --bench inventory
//!
//! A benchmark, not a test: it prints figures and never fails on them.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator of the `kqueen` binary (server/src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::inventory::checks::{builtin, run_all, CheckSettings};
use kqueen_core::inventory::fleet::FleetFilter;
use kqueen_core::inventory::{
    ContainerInfo, ImageRef, NodeInfo, PodInfo, PodPhase, Resources, Snapshot, Workload,
    WorkloadKind, WorkloadState,
};
use kqueen_core::page::Page;
use kqueen_core::tenant::NewTenant;
use kqueen_core::{Actor, ExternalLogin, InventorySettings, Kqueen};
use kqueen_testkit::fake_cluster::{seed as seed_fake, Shape};
use kqueen_testkit::fake_kube::FakeKube;
use kqueen_testkit::TestDatabase;

mod common;
use common::{percentiles, Fleet, Portal};

const TENANTS: usize = 10;
const CLUSTERS: usize = 100;
const NODES: usize = 20;
const NAMESPACES: usize = 20;
const WORKLOADS: usize = 100;
const PODS_PER_WORKLOAD: usize = 10;
/// Distinct images in the fleet; each cluster runs 100 of them, overlapping with others.
const IMAGE_POOL: usize = 400;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let samples = env_usize("KQUEEN_BENCH_SAMPLES", 200);
    let sync_clusters = env_usize("KQUEEN_BENCH_SYNC_CLUSTERS", 20);
    runtime.block_on(async {
        println!(
            "inventory: {CLUSTERS} clusters x {} pods ({NODES} nodes, {WORKLOADS} workloads each) \
             in {TENANTS} tenants; {samples} sequential requests per case",
            WORKLOADS * PODS_PER_WORKLOAD
        );
        queries("sqlite", TestDatabase::sqlite(), samples).await;
        match TestDatabase::postgres().await {
            Some(db) => queries("postgres", db, samples).await,
            None => println!("postgres: skipped (KQUEEN_TEST_SKIP_POSTGRES)"),
        }
        sync("sqlite", TestDatabase::sqlite(), sync_clusters).await;
        if let Some(db) = TestDatabase::postgres().await {
            sync("postgres", db, sync_clusters).await;
        }
    });
}

fn image_name(i: usize) -> String {
    match i % 4 {
        0 => format!("nginx-{i}:1.{}", i % 30),
        1 => format!("ghcr.io/acme/service-{i}:v2.{}.0", i % 10),
        2 => format!("registry.k8s.io/component-{i}:v1.33.{}", i % 5),
        _ => format!("quay.io/team/app-{i}:latest"),
    }
}

/// One cluster's synthetic snapshot: cluster `c` runs images `c*7 .. c*7+100` of the pool.
fn snapshot(c: usize) -> Snapshot {
    let gib = 1u64 << 30;
    let mut nodes: Vec<NodeInfo> = (0..NODES)
        .map(|n| NodeInfo {
            name: format!("node-{n:02}"),
            ready: n != NODES - 1 || !c.is_multiple_of(10),
            kubelet_version: format!("v1.{}.2", 31 + c % 4),
            container_runtime: "containerd://2.0.5".into(),
            os_image: "Debian GNU/Linux 12 (bookworm)".into(),
            kernel_version: "6.1.0-30-amd64".into(),
            architecture: "amd64".into(),
            capacity: Resources {
                cpu_millis: 16_000,
                memory_bytes: 64 * gib,
            },
            allocatable: Resources {
                cpu_millis: 15_500,
                memory_bytes: 60 * gib,
            },
            used: Some(Resources {
                cpu_millis: 4_000,
                memory_bytes: 20 * gib,
            }),
            ..NodeInfo::default()
        })
        .collect();
    let mut workloads = Vec::new();
    let mut pods = Vec::new();
    for w in 0..WORKLOADS {
        let namespace = format!("ns-{:02}", w % NAMESPACES);
        let name = format!("app-{w:03}");
        let spec = image_name((c * 7 + w) % IMAGE_POOL);
        let digest = format!("sha256:{:064x}", (c * 7 + w) % IMAGE_POOL);
        let mut image = ImageRef::parse(&spec);
        if let Some(i) = image.as_mut() {
            i.digest = Some(digest);
        }
        workloads.push(Workload {
            namespace: namespace.clone(),
            kind: WorkloadKind::Deployment,
            name: name.clone(),
            desired: PODS_PER_WORKLOAD as u32,
            ready: PODS_PER_WORKLOAD as u32,
            state: WorkloadState::Ready,
        });
        for p in 0..PODS_PER_WORKLOAD {
            let node = (w * PODS_PER_WORKLOAD + p) % NODES;
            let requests = Resources {
                cpu_millis: 100,
                memory_bytes: gib / 8,
            };
            nodes[node].requested.add(requests);
            nodes[node].pods += 1;
            pods.push(PodInfo {
                namespace: namespace.clone(),
                name: format!("{name}-5f7c9-{p}"),
                phase: PodPhase::Running,
                node: Some(nodes[node].name.clone()),
                restarts: 0,
                workload_kind: WorkloadKind::Deployment,
                workload_name: name.clone(),
                requests,
                limits: requests,
                host_path: false,
                containers: vec![ContainerInfo {
                    name: "main".into(),
                    image_spec: spec.clone(),
                    image: image.clone(),
                    privileged: w == 0,
                    init: false,
                }],
            });
        }
    }
    Snapshot {
        api_version: format!("v1.{}.2", 31 + c % 4),
        nodes,
        namespaces: (0..NAMESPACES).map(|n| format!("ns-{n:02}")).collect(),
        workloads,
        pods,
        metrics: true,
    }
}

/// `CLUSTERS` Ready clusters in `TENANTS` tenants, each with its inventory and findings.
async fn seed(k: &Kqueen) {
    let fleet = Fleet::create(k, TENANTS).await;
    let checks = builtin(&CheckSettings {
        allowed_registries: vec!["docker.io".into(), "registry.k8s.io".into()],
        min_kubernetes: Some((1, 32)),
    });
    for i in 0..CLUSTERS {
        let id = fleet
            .insert_cluster(k, i, ClusterState::Ready, NODES as u32)
            .await;
        let snap = snapshot(i);
        let findings = run_all(&checks, &snap);
        k.store()
            .save_inventory(id, &snap, &findings, kqueen_core::clock::now(), 0)
            .await
            .unwrap();
    }
}

/// p50, p99 and max of `samples` sequential runs of `f` after 10 warm-up runs.
async fn time<F, Fut>(samples: usize, mut f: F) -> String
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..10 {
        f().await;
    }
    let mut all = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        f().await;
        all.push(t.elapsed());
    }
    percentiles(&mut all)
}

async fn queries(backend: &str, db: TestDatabase, samples: usize) {
    let portal = Portal::start(&db).await;
    // A tenant admin of t-03, through single sign-on groups (core calls only).
    let k = portal
        .kqueen()
        .clone()
        .with_group_map(GroupMap::parse("t-03-admins=t-03:admin").unwrap());
    let seeded = Instant::now();
    seed(&k).await;
    println!(
        "{backend}: seeded {} pods in {:.1} s",
        CLUSTERS * WORKLOADS * PODS_PER_WORKLOAD,
        seeded.elapsed().as_secs_f64()
    );
    // Planner statistics as the server's own minute job refreshes them after bulk work
    // (no manual ANALYZE).
    let analysed = k.store().refresh_statistics().await.unwrap();
    println!("{backend}: planner statistics refreshed for {analysed:?}");
    // KQUEEN_BENCH_PAUSE=postgres:600 keeps that backend's database for EXPLAIN.
    if let Some(wait) = std::env::var("KQUEEN_BENCH_PAUSE")
        .ok()
        .and_then(|v| v.strip_prefix(&format!("{backend}:")).map(str::to_owned))
    {
        println!("{backend}: database {} kept for {wait} s", db.url());
        tokio::time::sleep(Duration::from_secs(wait.parse().unwrap_or(600))).await;
    }
    let admin = Actor::user(
        k.auth()
            .login_external(
                &ExternalLogin {
                    issuer: "http://idp.test".into(),
                    subject: "ada".into(),
                    preferred_username: Some("ada".into()),
                    email: None,
                    name: None,
                    groups: vec!["t-03-admins".into()],
                },
                None,
            )
            .await
            .unwrap(),
    );
    let ops = Actor::cli(None);
    let core_cases: [(&str, &Actor, FleetFilter); 3] = [
        ("core fleet_images (page 1)", &ops, FleetFilter::default()),
        (
            "core fleet_images q=nginx-1",
            &ops,
            FleetFilter {
                q: Some("nginx-1".into()),
                ..FleetFilter::default()
            },
        ),
        (
            "core fleet_images (tenant admin)",
            &admin,
            FleetFilter::default(),
        ),
    ];
    for (name, actor, filter) in core_cases {
        let figures = time(samples, || async {
            k.fleet()
                .fleet_images(actor, &filter, Page::new(50, 0))
                .await
                .unwrap();
        })
        .await;
        println!("{backend}: {name:40} {figures}");
    }
    let figures = time(samples, || async {
        k.fleet()
            .fleet_overview(&ops, &FleetFilter::default(), false, Page::default())
            .await
            .unwrap();
    })
    .await;
    println!("{backend}: {:40} {figures}", "core fleet_overview");

    let common::Operator { browser, api, .. } = portal.operator_clients(1).await;
    let url = portal.url.clone();
    for (name, client, path) in [
        ("GET /api/v1/fleet/images", &api, "/api/v1/fleet/images"),
        (
            "GET /api/v1/fleet/images?q=nginx-1",
            &api,
            "/api/v1/fleet/images?q=nginx-1",
        ),
        (
            "GET /fleet/images?q=nginx-1 (page)",
            &browser,
            "/fleet/images?q=nginx-1",
        ),
        ("GET /api/v1/fleet", &api, "/api/v1/fleet"),
        ("GET /fleet (page)", &browser, "/fleet"),
    ] {
        let target = format!("{url}{path}");
        let figures = time(samples, || async {
            let res = client.get(&target).send().await.unwrap();
            assert!(res.status().is_success(), "{target}: {}", res.status());
            res.bytes().await.unwrap();
        })
        .await;
        println!("{backend}: {name:40} {figures}");
    }
    portal.stop().await;
}

/// Imports `n` clusters that all point at one fake API server holding 1,000 pods, then
/// times full syncs of all of them.
async fn sync(backend: &str, db: TestDatabase, n: usize) {
    let fake = FakeKube::start().await;
    let shape = Shape {
        nodes: NODES,
        not_ready_nodes: 0,
        namespaces: NAMESPACES,
        deployments: WORKLOADS,
        pods_per_deployment: PODS_PER_WORKLOAD,
        images: (0..50).map(image_name).collect(),
        metrics: true,
    };
    seed_fake(&fake, &shape);
    let k = Kqueen::new(Arc::new(db.connect().await)).with_inventory_settings(InventorySettings {
        timeout: Duration::from_secs(120),
        ..InventorySettings::default()
    });
    let cli = Actor::cli(None);
    k.tenancy()
        .create_tenant(
            &cli,
            NewTenant {
                slug: "team".into(),
                display_name: None,
            },
        )
        .await
        .unwrap();
    kqueen_testkit::catalog::offer(&k, &cli, ("import", "existing", &[]), ("import", "")).await;
    for i in 0..n {
        k.clusters()
            .request_cluster(
                &cli,
                ClusterRequest {
                    tenant: Some("team".into()),
                    name: format!("c-{i:03}"),
                    template: "import".into(),
                    parameters: [("kubeconfig".to_owned(), fake.admin_kubeconfig())].into(),
                },
            )
            .await
            .unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(work.path().to_owned());
    config.poll_interval = Duration::from_millis(20);
    k.engine(config).run_until_idle().await.unwrap();
    for round in 1..=2 {
        let t = Instant::now();
        let results = k.fleet().sync_inventory().await.unwrap();
        let elapsed = t.elapsed().as_secs_f64();
        let failed = results.iter().filter(|r| r.error.is_some()).count();
        let mean_ms =
            results.iter().map(|r| r.duration_ms).sum::<u64>() as f64 / results.len() as f64;
        println!(
            "{backend}: full sync #{round} of {} clusters x {} pods (concurrency {}): {elapsed:.2} s, \
             {mean_ms:.0} ms per cluster, {failed} failed",
            results.len(),
            shape.pods(),
            k.inventory_settings().concurrency,
        );
    }
    k.shutdown().await;
}
