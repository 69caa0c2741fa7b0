//! What the benchmarks share: the real server on a fresh database, an operator's browser
//! session and API token, a seeded fleet of clusters inserted through the store, and
//! latency percentiles.

#![allow(clippy::unwrap_used, clippy::print_stdout, dead_code)]

use hyper::body::Bytes;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kqueen_core::audit::{action, AuditEvent, Outcome};
use kqueen_core::cluster::{
    Cluster, ClusterEvent, ClusterName, ClusterState, EventKind, Operation, OperationKind,
    ProviderInput, TemplateInput,
};
use kqueen_core::provisioner::ProviderKind;
use kqueen_core::store::Store;
use kqueen_core::tenant::{NewTenant, Tenant};
use kqueen_core::{Actor, Kqueen};
use kqueen_server::settings::Settings;
use kqueen_server::startup::{self, AppState};
use kqueen_testkit::TestDatabase;
use secrecy::SecretString;
use uuid::Uuid;

/// The real server (no workers) on `db`, listening on a local port.
pub struct Portal {
    pub state: AppState,
    pub url: String,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Portal {
    pub async fn start(db: &TestDatabase) -> Self {
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
        let server = tokio::spawn(startup::run(
            listener,
            state.clone(),
            None,
            std::future::pending(),
        ));
        Portal {
            state,
            url: format!("http://{addr}"),
            server,
            _dir: dir,
        }
    }

    pub fn kqueen(&self) -> &Kqueen {
        &self.state.kqueen
    }

    /// An operator ("bench") logged in: a browser client with its session cookie (pages), and
    /// an API client with a bearer token. Each keeps up to `connections` idle connections.
    pub async fn operator_clients(&self, connections: usize) -> Operator {
        let url = &self.url;
        self.kqueen()
            .auth()
            .create_local_user(&Actor::system(), "bench", "bench-password-1234", true)
            .await
            .unwrap();
        let browser = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(connections)
            .build()
            .unwrap();
        let res = browser
            .post(format!("{url}/auth/local"))
            .header("origin", url)
            .form(&[
                ("username", "bench"),
                ("password", "bench-password-1234"),
                ("next", "/"),
            ])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_redirection());
        let cookie = res
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok()?.split(';').next())
            .find(|c| c.starts_with("kqueen_session="))
            .unwrap()
            .to_owned();
        let token: serde_json::Value = browser
            .post(format!("{url}/api/v1/tokens"))
            .header("origin", url)
            .json(&serde_json::json!({"name": "bench"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let secret = token["secret"].as_str().unwrap().to_owned();
        let authorization = format!("Bearer {secret}");
        let api = reqwest::Client::builder()
            .pool_max_idle_per_host(connections)
            .default_headers(
                [(
                    reqwest::header::AUTHORIZATION,
                    authorization.parse().unwrap(),
                )]
                .into_iter()
                .collect(),
            )
            .build()
            .unwrap();
        Operator {
            browser,
            api,
            cookie,
            authorization,
        }
    }

    pub async fn stop(self) {
        self.server.abort();
        self.state.kqueen.shutdown().await;
    }
}

/// The logged-in operator: clients, and the raw headers for [`load`].
pub struct Operator {
    pub browser: reqwest::Client,
    pub api: reqwest::Client,
    /// `kqueen_session=…`: the `Cookie` header of the browser session.
    pub cookie: String,
    /// `Bearer …`: the `Authorization` header of the API token.
    pub authorization: String,
}

/// Tenants `t-00…`, a `command` provider "lab" and a template "small": what seeded clusters
/// refer to.
pub struct Fleet {
    pub tenants: Vec<Tenant>,
    provider_id: Uuid,
    template_id: Uuid,
}

impl Fleet {
    pub async fn create(k: &Kqueen, tenants: usize) -> Self {
        let cli = Actor::cli(None);
        let mut all = Vec::new();
        for i in 0..tenants {
            let slug = format!("t-{i:02}");
            let tenant = NewTenant {
                slug,
                display_name: None,
            };
            all.push(k.tenancy().create_tenant(&cli, tenant).await.unwrap());
        }
        let provider = k
            .catalog()
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
            .catalog()
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
        Fleet {
            tenants: all,
            provider_id: provider.id,
            template_id: template.template.id,
        }
    }

    /// Cluster `c-<i>` of tenant `i % tenants`, in `state`, inserted through the store with
    /// its create operation, first event and audit entry.
    pub async fn insert_cluster(
        &self,
        k: &Kqueen,
        i: usize,
        state: ClusterState,
        nodes: u32,
    ) -> Uuid {
        let cli = Actor::cli(None);
        let store: Arc<dyn Store> = k.store().clone();
        let tenant = &self.tenants[i % self.tenants.len()];
        let now = kqueen_core::clock::now();
        let id = Uuid::now_v7();
        let cluster = Cluster {
            id,
            tenant_id: tenant.id,
            tenant_slug: tenant.slug.to_string(),
            name: ClusterName::parse(&format!("c-{i:04}")).unwrap(),
            template_id: Some(self.template_id),
            template_name: "small".into(),
            provider_id: self.provider_id,
            provider_kind: ProviderKind::Command,
            state,
            parameters: [("node_count".to_owned(), nodes.to_string())].into(),
            node_count: nodes,
            endpoint: Some(format!("https://c-{i}.example.test:6443")),
            provisioner_state: serde_json::Value::Null,
            error: None,
            expires_at: None,
            production: false,
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
        id
    }
}

/// "p50 … p99 … max …" of the samples (sorted in place).
pub fn percentiles(all: &mut [Duration]) -> String {
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "p50 {:6.1} ms  p99 {:6.1} ms  max {:6.1} ms",
        ms(pct(0.50)),
        ms(pct(0.99)),
        ms(*all.last().unwrap())
    )
}

/// CPU time this process has used so far (user + system, all threads: server and load
/// generator), from /proc/self/stat; None off Linux. CPU per request moves much less than
/// throughput when other machines share the host's cores.
pub fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15, in clock ticks of 1/100 s (USER_HZ on Linux).
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Closed-loop HTTP/1.1 load, the way wrk or oha generate it: `connections` keep-alive
/// connections, each sending `GET path` with `headers` and reading the whole answer, one
/// request after another, for `length` (after one warm-up request each). Returns every
/// request's latency, and an answer's body (the last warm-up request's). Built on hyper's
/// bare connection API: the load generator shares the
/// machine with the server, and reqwest's pool, cookie jar and redirect handling cost it
/// about as much CPU as a small endpoint costs the server.
pub async fn load(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&'static str, String)],
    connections: usize,
    length: Duration,
) -> (Vec<Duration>, Bytes) {
    use http_body_util::{BodyExt, Empty};

    let (path, headers) = (path.to_owned(), headers.to_vec());
    let request = move || {
        let mut req =
            hyper::Request::get(path.as_str()).header(hyper::header::HOST, addr.to_string());
        for (name, value) in &headers {
            req = req.header(*name, value.as_str());
        }
        req.body(Empty::<Bytes>::new()).unwrap()
    };
    let mut senders = Vec::with_capacity(connections);
    let mut body = Bytes::new();
    for _ in 0..connections {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let res = sender.send_request(request()).await.unwrap();
        assert!(res.status().is_success(), "{}: {}", res.status(), addr);
        body = res.into_body().collect().await.unwrap().to_bytes();
        senders.push(sender);
    }
    let start = std::time::Instant::now();
    let mut tasks = Vec::with_capacity(connections);
    for mut sender in senders {
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while start.elapsed() < length {
                let t = std::time::Instant::now();
                let res = sender.send_request(request()).await.unwrap();
                assert!(res.status().is_success());
                res.into_body().collect().await.unwrap();
                samples.push(t.elapsed());
            }
            samples
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    (all, body)
}
