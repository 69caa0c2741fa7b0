//! Cluster list benchmark: seeds 1,000 clusters across 50 tenants through the real store,
//! starts the real server, and measures `GET /api/v1/clusters` and the `/clusters` page with
//! 64 concurrent connections — p50/p99 latency and requests per second — on SQLite and, when
//! it answers, on Postgres (127.0.0.1:5432). Target: p99 under 25 ms.
//!
//!   cargo bench -p kqueen-server --bench cluster_list            (release build)
//!   KQUEEN_BENCH_SECONDS=10 cargo bench -p kqueen-server --bench cluster_list
//!
//! A benchmark, not a test: it prints figures and never fails on them.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kqueen_core::audit::{action, AuditEvent, Outcome};
use kqueen_core::cluster::{
    Cluster, ClusterEvent, ClusterName, ClusterState, EventKind, Operation, OperationKind,
    ProviderInput, TemplateInput,
};
use kqueen_core::provisioner::ProviderKind;
use kqueen_core::store;
use kqueen_core::tenant::NewTenant;
use kqueen_core::testing::TestDatabase;
use kqueen_core::Actor;
use kqueen_server::settings::Settings;
use kqueen_server::startup;
use secrecy::SecretString;

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
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().join("data"),
        database_url: Some(SecretString::from(db.url().to_owned())),
        site_root: PathBuf::from(&site),
        workers: 0,
        ..Settings::defaults()
    };
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    settings.listen = addr;
    let state = startup::build_state(&settings).await.unwrap();
    let seeded = Instant::now();
    seed(&state.kqueen).await;
    let seed_time = seeded.elapsed();
    state
        .kqueen
        .create_local_user(&Actor::system(), "bench", "bench-password-1234", true)
        .await
        .unwrap();
    let server = tokio::spawn(startup::run(
        listener,
        state.clone(),
        None,
        std::future::pending(),
    ));
    let url = format!("http://{addr}");

    // An operator's session (pages) and API token (API).
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(CONNECTIONS)
        .build()
        .unwrap();
    let res = browser
        .post(format!("{url}/auth/local"))
        .header("origin", &url)
        .form(&[
            ("username", "bench"),
            ("password", "bench-password-1234"),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert!(res.status().is_redirection());
    let token: serde_json::Value = browser
        .post(format!("{url}/api/v1/tokens"))
        .header("origin", &url)
        .json(&serde_json::json!({"name": "bench"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = token["secret"].as_str().unwrap().to_owned();
    let api = reqwest::Client::builder()
        .pool_max_idle_per_host(CONNECTIONS)
        .default_headers(
            [(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {secret}").parse().unwrap(),
            )]
            .into_iter()
            .collect(),
        )
        .build()
        .unwrap();

    println!("{backend}: seeded in {:.1} s", seed_time.as_secs_f64());
    for (name, client, path) in [
        ("GET /api/v1/clusters", api.clone(), "/api/v1/clusters"),
        (
            "GET /api/v1/clusters?tenant=t-07",
            api.clone(),
            "/api/v1/clusters?tenant=t-07",
        ),
        ("GET /clusters (page)", browser.clone(), "/clusters"),
    ] {
        let figures = measure(client, format!("{url}{path}"), Duration::from_secs(seconds)).await;
        println!("{backend}: {name:36} {figures}");
    }
    server.abort();
    state.kqueen.shutdown().await;
}

/// Creates the tenants, one provider and template, and the clusters (with their operation
/// and first event) through the store.
async fn seed(k: &kqueen_core::Kqueen) {
    let cli = Actor::cli(None);
    let mut tenants = Vec::new();
    for i in 0..TENANTS {
        let t = k
            .create_tenant(
                &cli,
                NewTenant {
                    slug: format!("t-{i:02}"),
                    display_name: None,
                },
            )
            .await
            .unwrap();
        tenants.push(t);
    }
    let provider = k
        .create_provider(
            &cli,
            ProviderInput {
                name: "lab".into(),
                kind: "command".into(),
                settings: [("create_command".to_owned(), "/bin/true".to_owned())].into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let template = k
        .create_template(
            &cli,
            TemplateInput {
                name: "small".into(),
                provider: "lab".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let store: Arc<dyn kqueen_core::store::Store> = k.store().clone();
    for i in 0..CLUSTERS {
        let tenant = &tenants[i % TENANTS];
        let now = store::now();
        let id = uuid::Uuid::now_v7();
        let cluster = Cluster {
            id,
            tenant_id: tenant.id,
            tenant_slug: tenant.slug.to_string(),
            name: ClusterName::parse(&format!("c-{i:04}")).unwrap(),
            template_id: Some(template.template.id),
            template_name: "small".into(),
            provider_id: provider.id,
            provider_kind: ProviderKind::Command,
            state: ClusterState::Provisioning,
            parameters: [("node_count".to_owned(), "3".to_owned())].into(),
            node_count: 3,
            endpoint: Some(format!("https://c-{i}.example.test:6443")),
            provisioner_state: serde_json::Value::Null,
            error: None,
            expires_at: None,
            created_by: "bench".into(),
            created_at: now,
            updated_at: now,
        };
        let op = Operation::new(
            id,
            OperationKind::Create,
            None,
            "bench",
            now,
            chrono::Duration::hours(1),
        );
        let event = ClusterEvent::new(id, Some(op.id), EventKind::State, "seeded", now);
        let audit = AuditEvent::now(
            &cli,
            action::CLUSTER_CREATE,
            cluster.name.as_str(),
            Outcome::Success,
        )
        .in_tenant(tenant.id);
        store
            .create_cluster(&cluster, &op, &event, &audit)
            .await
            .unwrap();
    }
}

/// Runs CONNECTIONS loops of requests for `length`; returns p50, p99, max and throughput.
async fn measure(client: reqwest::Client, url: String, length: Duration) -> String {
    // Warm up connections and caches.
    for _ in 0..CONNECTIONS {
        let res = client.get(&url).send().await.unwrap();
        assert!(res.status().is_success(), "{url}: {}", res.status());
        res.bytes().await.unwrap();
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while start.elapsed() < length {
                let t = Instant::now();
                let res = client.get(&url).send().await.unwrap();
                assert!(res.status().is_success());
                res.bytes().await.unwrap();
                samples.push(t.elapsed());
            }
            samples
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "p50 {:6.1} ms  p99 {:6.1} ms  max {:6.1} ms  {:7.0} req/s  ({} requests)",
        ms(pct(0.50)),
        ms(pct(0.99)),
        ms(*all.last().unwrap()),
        all.len() as f64 / elapsed,
        all.len()
    )
}
