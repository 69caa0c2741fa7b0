//! Cluster list benchmark: seeds 1,000 clusters across 50 tenants through the real store
//! (every tenth Ready and never synced, so needing attention; the others provisioning),
//! starts the real server, and measures `GET /api/v1/clusters`, one cluster, the fleet
//! overview and the `/clusters` page with 64 concurrent connections — p50/p99 latency and
//! requests per second — on SQLite and, when it answers, on Postgres (127.0.0.1:5432).
//! Target: p99 under 25 ms (one cluster 15 ms, fleet 50 ms).
//!
//!   cargo bench -p kqueen-server --bench cluster_list            (release build)
//!   KQUEEN_BENCH_SECONDS=10 cargo bench -p kqueen-server --bench cluster_list
//!   KQUEEN_BENCH_ONLY=clusters cargo bench …   (only the cases whose name contains it)
//!   KQUEEN_BENCH_CLUSTERS=10000 KQUEEN_BENCH_TENANTS=500 cargo bench …   (the scale)
//!   KQUEEN_BENCH_DUMP=/tmp/answers cargo bench …   (writes one answer of each case there)
//!
//! On Postgres each HTTP case also prints how the tables were read during it (from
//! `pg_stat_user_tables`: index scans, sequential scans and the rows those read, per request):
//! a plan that scans a large table for every request shows as thousands of rows per request,
//! whatever the timings of this machine say.
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

const CONNECTIONS: usize = 64;

/// A count from the environment, or `default`.
fn count(name: &str, default: usize) -> usize {
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
    let seconds: u64 = std::env::var("KQUEEN_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let scale = Scale {
        clusters: count("KQUEEN_BENCH_CLUSTERS", 1_000),
        tenants: count("KQUEEN_BENCH_TENANTS", 50).max(1),
        seconds,
    };
    runtime.block_on(async {
        println!(
            "cluster list: {} clusters in {} tenants, {CONNECTIONS} connections, {seconds} s per case",
            scale.clusters, scale.tenants
        );
        run("sqlite", TestDatabase::sqlite(), &scale).await;
        match TestDatabase::postgres().await {
            Some(db) => run("postgres", db, &scale).await,
            None => println!("postgres: skipped (KQUEEN_TEST_SKIP_POSTGRES)"),
        }
    });
}

/// How much to seed and how long to measure each case.
struct Scale {
    clusters: usize,
    tenants: usize,
    seconds: u64,
}

async fn run(backend: &str, db: TestDatabase, scale: &Scale) {
    let portal = Portal::start(&db).await;
    let seeded = Instant::now();
    let fleet = Fleet::create(portal.kqueen(), scale.tenants).await;
    let mut last = None;
    for i in 0..scale.clusters {
        let id = fleet
            .insert_cluster(portal.kqueen(), i, seeded_state(i), 3)
            .await;
        last = Some(id);
    }
    let one = format!("/api/v1/clusters/{}", last.unwrap_or_default());
    let tables = match backend {
        "postgres" => Some(TableReads::connect(db.url()).await),
        _ => None,
    };
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
        ("GET /api/v1/clusters/{id}", &api[..], one.as_str()),
        ("GET /api/v1/fleet (overview)", &api[..], "/api/v1/fleet"),
        (
            "GET /api/v1/fleet?attention=true",
            &api[..],
            "/api/v1/fleet?attention=true",
        ),
        ("GET /fleet (dashboard page)", &browser[..], "/fleet"),
        ("GET /tokens (page floor)", &browser[..], "/tokens"),
        ("GET /clusters (page)", &browser[..], "/clusters"),
    ] {
        if !only.as_deref().is_none_or(|o| name.contains(o)) {
            continue;
        }
        let length = Duration::from_secs(scale.seconds);
        let before = match &tables {
            Some(t) => Some(t.snapshot().await),
            None => None,
        };
        let (start, cpu) = (Instant::now(), cpu_time());
        let (mut all, body) = load(addr, path, headers, CONNECTIONS, length).await;
        if let Ok(dir) = std::env::var("KQUEEN_BENCH_DUMP") {
            let file = format!(
                "{backend}-{}.txt",
                name.replace(|c: char| !c.is_alphanumeric(), "_")
            );
            std::fs::write(std::path::Path::new(&dir).join(file), &body).unwrap();
        }
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
            "{backend}: {name:36} {}  {:7.0} req/s  {cpu}  ({requests} requests, {:.1} KB each)",
            percentiles(&mut all),
            requests as f64 / elapsed,
            body.len() as f64 / 1000.0,
        );
        if let (Some(t), Some(before)) = (&tables, before) {
            t.print_since(&before, requests).await;
        }
    }
    portal.stop().await;
}

/// How Postgres read each table: index scans, sequential scans and the rows they returned.
struct TableReads {
    pool: sqlx::PgPool,
}

type Reads = std::collections::BTreeMap<String, [i64; 4]>;

impl TableReads {
    async fn connect(url: &str) -> Self {
        Self {
            pool: sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect(url)
                .await
                .unwrap(),
        }
    }

    /// Per table: sequential scans, rows they read, index scans, rows those fetched.
    async fn snapshot(&self) -> Reads {
        // Backends report their counters up to 10 s after going idle: read until two readings
        // a second apart agree (at most 15 s).
        let mut last = self.read().await;
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = self.read().await;
            if now == last {
                break;
            }
            last = now;
        }
        last
    }

    async fn read(&self) -> Reads {
        let rows: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT relname::text, coalesce(seq_scan, 0), coalesce(seq_tup_read, 0), \
             coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables",
        )
        .fetch_all(&self.pool)
        .await
        .unwrap();
        rows.into_iter()
            .map(|(t, a, b, c, d)| (t, [a, b, c, d]))
            .collect()
    }

    /// The tables read during a case of `requests` requests, per request; a table read by a
    /// sequential scan at every request is marked.
    async fn print_since(&self, before: &Reads, requests: usize) {
        let after = self.snapshot().await;
        let per = |v: i64| v as f64 / requests.max(1) as f64;
        let mut line = Vec::new();
        for (table, now) in &after {
            let then = before.get(table).copied().unwrap_or_default();
            let d: Vec<i64> = now.iter().zip(then).map(|(a, b)| a - b).collect();
            if d.iter().all(|v| *v == 0) {
                continue;
            }
            let flag = if per(d[0]) >= 0.5 && per(d[1]) >= 100.0 {
                " SEQ SCAN"
            } else {
                ""
            };
            line.push(format!(
                "{table}: idx {:.2} ({:.0} rows), seq {:.2} ({:.0} rows){flag}",
                per(d[2]),
                per(d[3]),
                per(d[0]),
                per(d[1]),
            ));
        }
        println!("    per request: {}", line.join("; "));
    }
}

/// Every tenth cluster Ready and never synced (needing attention on the fleet dashboard),
/// the others provisioning.
fn seeded_state(i: usize) -> ClusterState {
    if i.is_multiple_of(10) {
        ClusterState::Ready
    } else {
        ClusterState::Provisioning
    }
}
