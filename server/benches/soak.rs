//! Soak: `kqueen serve` (this build's binary, in its own process, with its operation
//! workers) under mixed traffic at a fixed rate for ten minutes, on SQLite and on PostgreSQL:
//! cluster lists and single clusters over the API, the cluster pages, kubeconfig downloads,
//! fleet queries, new clusters requested (an installer command provisions them) and deleted.
//!
//!     make soak          # both stores, 10 minutes each
//!     KQUEEN_SOAK_MINUTES=2 KQUEEN_SOAK_RATE=100 KQUEEN_SOAK_STORE=sqlite \
//!         cargo bench -p kqueen-server --bench soak
//!
//! Open loop, as wrk2 does it: request n is due at start + n / rate whatever the answers
//! before it, and its latency counts from when it was due, so a slow server cannot hide
//! its queue. Prints per route the count, p50, p99 and max, the errors (any answer but the
//! expected one, any request not sent), and the server's resident memory at minute 2 and at
//! the end. Fails when there was any error. All traffic goes to 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kqueen_testkit::TestDatabase;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const PASSWORD: &str = "soak-operator-password";
/// Requests in flight beyond which a due request is not sent (and counted as an error).
const MAX_IN_FLIGHT: usize = 512;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `kqueen serve` on a database, killed when dropped.
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(db_url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("site/pkg")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let env = [
            ("KQUEEN_DATABASE_URL", db_url.to_owned()),
            (
                "KQUEEN_DATA_DIR",
                dir.path().join("data").display().to_string(),
            ),
            (
                "KQUEEN_SITE_ROOT",
                dir.path().join("site").display().to_string(),
            ),
            ("KQUEEN_LISTEN", format!("127.0.0.1:{port}")),
            // The seeded clusters' API servers do not exist: their inventory syncs fail, as
            // expected, at every turn.
            (
                "RUST_LOG",
                "warn,kqueen_core::service::fleet::sync=error".to_owned(),
            ),
        ];
        let kqueen = |args: &[&str], stdin: Option<&str>| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_kqueen"))
                .args(args)
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            if let Some(text) = stdin {
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
            }
            child
        };
        let out = kqueen(
            &["user", "create", "soak", "--operator", "--password-stdin"],
            Some(&format!("{PASSWORD}\n")),
        )
        .wait_with_output()
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut child = kqueen(&["serve"], None);
        // Its log (warnings and errors) goes to the bench's stderr.
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let probe = reqwest::Client::builder().no_proxy().build().unwrap();
        while probe.get(format!("{url}/readyz")).send().await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(60), "no /readyz");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Server {
            child,
            url,
            _dir: dir,
        }
    }

    /// Resident memory (MiB) and CPU time used so far (s), from /proc.
    fn usage(&self) -> (f64, f64) {
        let pid = self.child.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rss_kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|i| fields.get(*i)?.parse::<f64>().ok())
            .sum();
        (rss_kb / 1024.0, ticks / 100.0)
    }
}

/// The operator's clients: pages with the session cookie, the API with a token.
struct Operator {
    url: String,
    api: reqwest::Client,
    browser: reqwest::Client,
}

impl Operator {
    async fn login(url: &str) -> Self {
        // Never through a proxy: the traffic, the password and the token stay on loopback.
        let browser = reqwest::Client::builder()
            .no_proxy()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        let res = browser
            .post(format!("{url}/auth/local"))
            .header("origin", url)
            .form(&[("username", "soak"), ("password", PASSWORD), ("next", "/")])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_redirection(), "login: {}", res.status());
        let token: Value = browser
            .post(format!("{url}/api/v1/tokens"))
            .header("origin", url)
            .json(&json!({"name": "soak", "days": 1}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let bearer = format!("Bearer {}", token["secret"].as_str().unwrap());
        let api = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(64)
            .default_headers(
                [(reqwest::header::AUTHORIZATION, bearer.parse().unwrap())]
                    .into_iter()
                    .collect(),
            )
            .build()
            .unwrap();
        Operator {
            url: url.to_owned(),
            api,
            browser,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self.api.request(method, format!("{}{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }
}

/// The catalogue (an installer that writes a kubeconfig), `tenants` tenants and `clusters`
/// Ready clusters, all through the API; the seeded clusters' ids.
async fn seed(
    op: &Operator,
    dir: &std::path::Path,
    tenants: usize,
    clusters: usize,
) -> Vec<String> {
    let installer = dir.join("install.sh");
    std::fs::write(
        &installer,
        "#!/bin/sh\ncat > \"$KQ_KUBECONFIG\" <<EOF\napiVersion: v1\nkind: Config\nclusters:\n\
         - name: c\n  cluster: {server: 'https://127.0.0.1:9'}\ncontexts:\n\
         - name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n\
         - name: u\n  user: {token: soak-token}\nEOF\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &installer,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let provider = json!({"name": "lab", "kind": "command", "settings": {
        "create_command": installer.display().to_string(), "delete_command": "/bin/true"}});
    let (status, body) = op
        .call(Method::POST, "/api/v1/providers", Some(provider))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let template = json!({"name": "small", "provider": "lab"});
    let (status, body) = op
        .call(Method::POST, "/api/v1/templates", Some(template))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for t in 0..tenants {
        let (status, body) = op
            .call(
                Method::POST,
                "/api/v1/tenants",
                Some(json!({"slug": format!("t-{t:02}")})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let started = Instant::now();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (ids, next) = (ids.clone(), next.clone());
            let op = Operator {
                url: op.url.clone(),
                api: op.api.clone(),
                browser: op.browser.clone(),
            };
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= clusters {
                        break;
                    }
                    let body = json!({"tenant": format!("t-{:02}", i % tenants),
                        "name": format!("c-{i:05}"), "template": "small"});
                    let (status, body) =
                        op.call(Method::POST, "/api/v1/clusters", Some(body)).await;
                    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
                    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
                    ids.lock().unwrap().push(id);
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    loop {
        let (_, body) = op
            .call(Method::GET, "/api/v1/clusters?state=ready&limit=1", None)
            .await;
        if body["total"].as_u64() == Some(clusters as u64) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(1800), "{body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "seeded {clusters} clusters in {tenants} tenants through the API in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let ids = ids.lock().unwrap().clone();
    ids
}

/// What a due request does: its route label and the call.
#[derive(Clone, Copy)]
enum Kind {
    ListApi,
    ListTenantApi,
    ClusterApi,
    ListPage,
    ClusterPage,
    Kubeconfig,
    FleetVersions,
    FleetImages,
    Fleet,
    Request,
    Delete,
}

/// The mix, out of 100.
const MIX: [(Kind, u32); 11] = [
    (Kind::ListApi, 15),
    (Kind::ListTenantApi, 10),
    (Kind::ClusterApi, 25),
    (Kind::ListPage, 8),
    (Kind::ClusterPage, 7),
    (Kind::Kubeconfig, 5),
    (Kind::FleetVersions, 5),
    (Kind::FleetImages, 5),
    (Kind::Fleet, 5),
    (Kind::Request, 8),
    (Kind::Delete, 7),
];

/// A small deterministic generator (xorshift): the same mix in every run.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

struct Shared {
    op: Operator,
    seeded: Vec<String>,
    tenants: usize,
    /// Clusters the soak requested, not yet deleted.
    created: Mutex<Vec<String>>,
    created_count: std::sync::atomic::AtomicUsize,
    samples: Mutex<BTreeMap<&'static str, Vec<Duration>>>,
    errors: Mutex<BTreeMap<&'static str, Vec<String>>>,
}

impl Shared {
    fn record(&self, route: &'static str, due: Instant, outcome: Result<(), String>) {
        let elapsed = due.elapsed();
        self.samples
            .lock()
            .unwrap()
            .entry(route)
            .or_default()
            .push(elapsed);
        if let Err(e) = outcome {
            self.errors
                .lock()
                .unwrap()
                .entry(route)
                .or_default()
                .push(e);
        }
    }
}

/// Sends `req`, expecting `want`.
async fn expect(req: reqwest::RequestBuilder, want: StatusCode) -> Result<Value, String> {
    let res = req.send().await.map_err(|e| e.to_string())?;
    let status = res.status();
    let body = res.bytes().await.map_err(|e| e.to_string())?;
    if status != want {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
    }
    Ok(serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn run_one(s: Arc<Shared>, kind: Kind, pick: u64, due: Instant) {
    let url = &s.op.url;
    let seeded = &s.seeded[pick as usize % s.seeded.len()];
    let get = |path: String| s.op.api.get(format!("{url}{path}"));
    let (route, outcome): (&'static str, Result<(), String>) = match kind {
        Kind::ListApi => (
            "GET /api/v1/clusters",
            expect(get("/api/v1/clusters?limit=50".into()), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::ListTenantApi => (
            "GET /api/v1/clusters?tenant",
            expect(
                get(format!(
                    "/api/v1/clusters?tenant=t-{:02}&limit=50",
                    pick as usize % s.tenants
                )),
                StatusCode::OK,
            )
            .await
            .map(drop),
        ),
        Kind::ClusterApi => (
            "GET /api/v1/clusters/{id}",
            expect(get(format!("/api/v1/clusters/{seeded}")), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::ListPage => (
            "GET /clusters (page)",
            expect(s.op.browser.get(format!("{url}/clusters")), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::ClusterPage => (
            "GET /clusters/{id} (page)",
            expect(
                s.op.browser.get(format!("{url}/clusters/{seeded}")),
                StatusCode::OK,
            )
            .await
            .map(drop),
        ),
        Kind::Kubeconfig => (
            "GET /api/v1/clusters/{id}/kubeconfig",
            expect(
                get(format!("/api/v1/clusters/{seeded}/kubeconfig")),
                StatusCode::OK,
            )
            .await
            .map(drop),
        ),
        Kind::FleetVersions => (
            "GET /api/v1/fleet/versions",
            expect(get("/api/v1/fleet/versions".into()), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::FleetImages => (
            "GET /api/v1/fleet/images",
            expect(get("/api/v1/fleet/images".into()), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::Fleet => (
            "GET /api/v1/fleet",
            expect(get("/api/v1/fleet".into()), StatusCode::OK)
                .await
                .map(drop),
        ),
        Kind::Request => {
            let n = s
                .created_count
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let body = json!({"tenant": format!("t-{:02}", n % s.tenants),
                "name": format!("soak-{n:06}"), "template": "small"});
            let req = s.op.api.post(format!("{url}/api/v1/clusters")).json(&body);
            let outcome = expect(req, StatusCode::ACCEPTED).await.map(|v| {
                if let Some(id) = v["cluster"]["id"].as_str() {
                    s.created.lock().unwrap().push(id.to_owned());
                }
            });
            ("POST /api/v1/clusters", outcome)
        }
        Kind::Delete => {
            // The oldest cluster the soak requested, taken off the list first so that no
            // other task deletes it too (a delete is accepted in any state: the create, if
            // still running, is cancelled); none yet: nothing to do.
            let oldest = {
                let mut created = s.created.lock().unwrap();
                (!created.is_empty()).then(|| created.remove(0))
            };
            let Some(id) = oldest else {
                return;
            };
            let req = s.op.api.delete(format!("{url}/api/v1/clusters/{id}"));
            (
                "DELETE /api/v1/clusters/{id}",
                expect(req, StatusCode::ACCEPTED).await.map(drop),
            )
        }
    };
    s.record(route, due, outcome);
}

async fn soak(store: &str, db: &TestDatabase) {
    let minutes: f64 = env_or("KQUEEN_SOAK_MINUTES", 10.0);
    let rate: f64 = env_or("KQUEEN_SOAK_RATE", 200.0);
    let clusters: usize = env_or("KQUEEN_SOAK_CLUSTERS", 1000);
    let tenants: usize = env_or("KQUEEN_SOAK_TENANTS", 50);
    let server = Server::start(db.url()).await;
    let op = Operator::login(&server.url).await;
    let dir = tempfile::tempdir().unwrap();
    let seeded = seed(&op, dir.path(), tenants, clusters).await;
    let shared = Arc::new(Shared {
        op,
        seeded,
        tenants,
        created: Mutex::new(Vec::new()),
        created_count: std::sync::atomic::AtomicUsize::new(0),
        samples: Mutex::new(BTreeMap::new()),
        errors: Mutex::new(BTreeMap::new()),
    });
    let length = Duration::from_secs_f64(minutes * 60.0);
    let total = (rate * length.as_secs_f64()) as u64;
    let (rss_start, cpu_start) = server.usage();
    println!(
        "soak {store}: {minutes} min at {rate} req/s ({total} requests), RSS at start {rss_start:.0} MiB"
    );
    let in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut shed = 0u64;
    let mut random = 0x9e37_79b9_7f4a_7c15u64;
    let mut rss_minute_2 = None;
    let mut rss_max = rss_start;
    let mut next_report = Duration::from_secs(60);
    let start = Instant::now();
    for n in 0..total {
        let due = start + Duration::from_secs_f64(n as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        if start.elapsed() >= next_report {
            let (rss, _) = server.usage();
            rss_max = rss_max.max(rss);
            let minute = next_report.as_secs() / 60;
            if minute == 2 {
                rss_minute_2 = Some(rss);
            }
            println!(
                "  minute {minute}: RSS {rss:.0} MiB, {} in flight",
                in_flight.load(std::sync::atomic::Ordering::Relaxed)
            );
            next_report += Duration::from_secs(60);
        }
        if in_flight.load(std::sync::atomic::Ordering::Relaxed) >= MAX_IN_FLIGHT {
            shed += 1;
            continue;
        }
        let roll = (next_random(&mut random) % 100) as u32;
        let mut acc = 0;
        let kind = MIX
            .iter()
            .find(|(_, w)| {
                acc += w;
                roll < acc
            })
            .map_or(Kind::ListApi, |(k, _)| *k);
        let pick = next_random(&mut random);
        let (s, flight) = (shared.clone(), in_flight.clone());
        flight.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(async move {
            run_one(s, kind, pick, due).await;
            flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        });
    }
    while in_flight.load(std::sync::atomic::Ordering::Relaxed) > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = start.elapsed();
    let (rss_end, cpu_end) = server.usage();
    rss_max = rss_max.max(rss_end);
    println!(
        "{:<40} {:>7} {:>9} {:>9} {:>9} {:>6}",
        "route", "count", "p50 ms", "p99 ms", "max ms", "errors"
    );
    let samples = std::mem::take(&mut *shared.samples.lock().unwrap());
    let errors = std::mem::take(&mut *shared.errors.lock().unwrap());
    let mut sent = 0;
    for (route, mut all) in samples {
        all.sort();
        let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        sent += all.len();
        println!(
            "{route:<40} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>6}",
            all.len(),
            ms(pct(0.50)),
            ms(pct(0.99)),
            ms(*all.last().unwrap()),
            errors.get(route).map_or(0, Vec::len)
        );
    }
    let error_count: usize = errors.values().map(Vec::len).sum::<usize>() + shed as usize;
    println!(
        "{sent} requests in {:.0} s ({:.1} req/s), {} clusters requested; server CPU {:.0} s \
         ({:.0} % of one core); RSS start {rss_start:.0} MiB, minute 2 {}, end {rss_end:.0} MiB, \
         max {rss_max:.0} MiB; errors {error_count} (not sent: {shed})",
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64(),
        shared
            .created_count
            .load(std::sync::atomic::Ordering::Relaxed),
        cpu_end - cpu_start,
        (cpu_end - cpu_start) / elapsed.as_secs_f64() * 100.0,
        rss_minute_2.map_or("-".to_owned(), |r| format!("{r:.0} MiB")),
    );
    for (route, all) in &errors {
        println!(
            "  {route}: {}",
            all.iter().take(3).cloned().collect::<Vec<_>>().join(" | ")
        );
    }
    assert_eq!(error_count, 0, "the soak saw errors");
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let which = std::env::var("KQUEEN_SOAK_STORE").unwrap_or_else(|_| "both".into());
    runtime.block_on(async {
        if which == "sqlite" || which == "both" {
            let db = TestDatabase::sqlite();
            soak("sqlite", &db).await;
        }
        if which == "postgres" || which == "both" {
            match TestDatabase::postgres().await {
                Some(db) => soak("postgres", &db).await,
                None => println!("skipped: postgres (KQUEEN_TEST_SKIP_POSTGRES is set)"),
            }
        }
    });
}
