//! Cluster list benchmark: seeds 1,000 clusters across 50 tenants through the real store,
//! starts the real server, and measures `GET /api/v1/clusters` and the `/clusters` page with
//! 64 concurrent connections — p50/p99 latency and requests per second — on SQLite and, when
//! it answers, on Postgres (127.0.0.1:5432). Target: p99 under 25 ms.
//!
//!   cargo bench -p kqueen-server --bench cluster_list            (release build)
//!   KQUEEN_BENCH_SECONDS=10 cargo bench -p kqueen-server --bench cluster_list
//!   KQUEEN_BENCH_ONLY=clusters cargo bench …   (only the cases whose name contains it)
//!
//! Each HTTP case prints p50/p99/max latency, requests per second, and the CPU time the
//! process (server and load generator) spent per request: on a shared virtual machine the
//! throughput of one run can differ from the next by a third, the CPU per request far less.
//!
//! A benchmark, not a test: it prints figures and never fails on them.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

/// The allocator of the `kqueen` binary (server/src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kqueen_core::cluster::{ClusterFilter, ClusterState};
use kqueen_core::page::Page;
use kqueen_core::Actor;
use kqueen_testkit::TestDatabase;

mod common;
use common::{cpu_time, load, percentiles, Fleet, Portal};

const TENANTS: usize = 50;
const CLUSTERS: usize = 1_000;
const CONNECTIONS: usize = 64;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let seconds: u64 = std::env::var("KQUEEN_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    runtime.block_on(async {
        println!(
            "cluster list: {CLUSTERS} clusters in {TENANTS} tenants, {CONNECTIONS} connections, {seconds} s per case"
        );
        run("sqlite", TestDatabase::sqlite(), seconds).await;
        match TestDatabase::postgres().await {
            Some(db) => run("postgres", db, seconds).await,
            None => println!("postgres: skipped (KQUEEN_TEST_SKIP_POSTGRES)"),
        }
    });
}

async fn run(backend: &str, db: TestDatabase, seconds: u64) {
    let portal = Portal::start(&db).await;
    let seeded = Instant::now();
    let fleet = Fleet::create(portal.kqueen(), TENANTS).await;
    for i in 0..CLUSTERS {
        fleet
            .insert_cluster(portal.kqueen(), i, ClusterState::Provisioning, 3)
            .await;
    }
    let seed_time = seeded.elapsed();
    // No manual ANALYZE: what the server's own minute job does after a bulk load (Postgres
    // statistics of the tables the seed changed; without them the planner guesses 3 rows per
    // table and scans everything for every page). Autovacuum is off on these machines.
    let analysed = portal.kqueen().store().refresh_statistics().await.unwrap();
    println!("{backend}: planner statistics refreshed for {analysed:?}");
    let operator = portal.operator_clients(CONNECTIONS).await;
    let addr: std::net::SocketAddr = portal.url.trim_start_matches("http://").parse().unwrap();
    let api = [("authorization", operator.authorization.clone())];
    let browser = [("cookie", operator.cookie.clone())];

    println!("{backend}: seeded in {:.1} s", seed_time.as_secs_f64());
    let only = std::env::var("KQUEEN_BENCH_ONLY").ok();
    // The core use case alone, one call at a time: what a request costs below HTTP.
    let cli = Actor::cli(None);
    for (name, filter) in [
        ("core list_clusters (first page)", ClusterFilter::default()),
        (
            "core list_clusters (tenant t-07)",
            ClusterFilter {
                tenant: Some("t-07".into()),
                ..ClusterFilter::default()
            },
        ),
    ] {
        if !only.as_deref().is_none_or(|o| name.contains(o)) {
            continue;
        }
        let k = portal.kqueen();
        let calls = 300;
        let t = Instant::now();
        for _ in 0..calls {
            k.clusters()
                .list_clusters(&cli, &filter, Page::default())
                .await
                .unwrap();
        }
        let per_call = t.elapsed().as_secs_f64() * 1e6 / f64::from(calls);
        println!("{backend}: {name:36} {per_call:7.0} us per call (one at a time)");
    }
    for (name, headers, path) in [
        // Floors: the HTTP stack alone, then with token authentication.
        ("GET /healthz (floor)", &[][..], "/healthz"),
        (
            "GET /api/v1/whoami (authentication)",
            &api[..],
            "/api/v1/whoami",
        ),
        ("GET /api/v1/clusters", &api[..], "/api/v1/clusters"),
        (
            "GET /api/v1/clusters?tenant=t-07",
            &api[..],
            "/api/v1/clusters?tenant=t-07",
        ),
        ("GET /tokens (page floor)", &browser[..], "/tokens"),
        ("GET /clusters (page)", &browser[..], "/clusters"),
    ] {
        if !only.as_deref().is_none_or(|o| name.contains(o)) {
            continue;
        }
        let length = Duration::from_secs(seconds);
        let (start, cpu) = (Instant::now(), cpu_time());
        let mut all = load(addr, path, headers, CONNECTIONS, length).await;
        let elapsed = start.elapsed().as_secs_f64();
        let requests = all.len();
        let cpu = match (cpu, cpu_time()) {
            (Some(before), Some(after)) => format!(
                "{:5.0} us CPU/req",
                (after - before).as_secs_f64() * 1e6 / requests as f64
            ),
            _ => String::new(),
        };
        println!(
            "{backend}: {name:36} {}  {:7.0} req/s  {cpu}  ({requests} requests)",
            percentiles(&mut all),
            requests as f64 / elapsed,
        );
    }
    portal.stop().await;
}
