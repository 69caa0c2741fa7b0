//! Starts the real application on 127.0.0.1:0 with its own database and site directory.
//!
//! In production a process runs one portal on one multi-thread runtime. Tests keep it that
//! way: every test server runs on one shared multi-thread runtime, and only one runs at a
//! time ([`ONE_SERVER`]). Leptos keeps process-wide reactive state, and several portal apps
//! rendering in one process at once were seen to lose a wake-up and hang a request (never
//! with one app: 6,000 mixed requests at 64 concurrent connections all completed; the
//! `concurrent_requests_all_complete` test keeps checking that). Tests talk to their server
//! over HTTP and reach its state only through [`TestApp::on_server`].

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::LazyLock;

use kqueen_core::engine::EngineConfig;
use kqueen_core::tenant::NewTenant;
use kqueen_core::Actor;
use kqueen_server::settings::Settings;
use kqueen_server::startup::{self, AppState};
use kqueen_testkit::TestDatabase;
use reqwest::header::{HeaderMap, HeaderValue, ORIGIN};
use secrecy::SecretString;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

static SERVER_RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("test-server")
        .enable_all()
        .build()
        .unwrap()
});

/// Held by each [`TestApp`] for its whole life: one in-process server at a time.
static ONE_SERVER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The longest any one request of a test may take: a request that hangs fails its test with
/// the request named, instead of holding the whole suite until CI's deadline.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Password of the accounts [`TestApp::user`] creates.
pub const PASSWORD: &str = "correct horse battery";

pub struct TestApp {
    pub url: String,
    /// A client without cookies: anonymous.
    pub client: reqwest::Client,
    pub state: AppState,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<std::io::Result<()>>,
    _db: TestDatabase,
    _dir: tempfile::TempDir,
    // Last field: released after everything above is dropped.
    _one_server: tokio::sync::MutexGuard<'static, ()>,
}

impl TestApp {
    pub async fn sqlite() -> TestApp {
        Self::spawn(TestDatabase::sqlite(), |_, _| {}).await
    }

    pub async fn postgres() -> Option<TestApp> {
        Some(Self::spawn(TestDatabase::postgres().await?, |_, _| {}).await)
    }

    /// A server whose settings `configure` adjusts, knowing the address it will listen on.
    pub async fn spawn(
        db: TestDatabase,
        configure: impl FnOnce(&mut Settings, SocketAddr) + Send + 'static,
    ) -> TestApp {
        Self::spawn_with_engine(db, configure, |_| {}).await
    }

    /// [`TestApp::spawn`], with the engine's pace as `engine` sets it (rollout turns, say).
    pub async fn spawn_with_engine(
        db: TestDatabase,
        configure: impl FnOnce(&mut Settings, SocketAddr) + Send + 'static,
        engine: impl FnOnce(&mut EngineConfig) + Send + 'static,
    ) -> TestApp {
        let one_server = ONE_SERVER.lock().await;
        let dir = tempfile::tempdir().unwrap();
        // A minimal built site: the server must serve whatever the build put there.
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(site.join("pkg/kqueen.css"), "main { color: black }").unwrap();
        let mut settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: dir.path().join("data"),
            database_url: Some(SecretString::from(db.url().to_owned())),
            site_root: PathBuf::from(&site),
            ..Settings::defaults()
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let (state, url, server) = SERVER_RUNTIME
            .spawn(async move {
                let listener = tokio::net::TcpListener::bind(settings.listen)
                    .await
                    .unwrap();
                let addr = listener.local_addr().unwrap();
                settings.listen = addr;
                configure(&mut settings, addr);
                let state = startup::build_state(&settings).await.unwrap();
                let mut config = startup::engine_config(&settings);
                if let Some(e) = config.as_mut() {
                    e.poll_interval = std::time::Duration::from_millis(50);
                    engine(e);
                }
                let server = tokio::spawn(startup::run(listener, state.clone(), config, async {
                    let _ = stopped.await;
                }));
                (state, format!("http://{addr}"), server)
            })
            .await
            .unwrap();
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        TestApp {
            url,
            client,
            state,
            stop: Some(stop),
            server,
            _db: db,
            _dir: dir,
            _one_server: one_server,
        }
    }

    /// Runs `f` with the server's state on the server's runtime.
    pub async fn on_server<F, Fut, T>(&self, f: F) -> T
    where
        F: FnOnce(AppState) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        SERVER_RUNTIME.spawn(f(self.state.clone())).await.unwrap()
    }

    /// Audit events matching `query` (up to 500, newest first), as the system sees them.
    pub async fn audit(
        &self,
        query: kqueen_core::audit::AuditQuery,
    ) -> Vec<kqueen_core::audit::AuditEvent> {
        self.on_server(move |s| async move {
            let page = kqueen_core::page::Page::new(500, 0);
            s.kqueen
                .audit()
                .audit_events(&Actor::system(), &query, page)
                .await
                .unwrap()
        })
        .await
    }

    pub async fn seed_tenant(&self, slug: &str, name: &str) {
        let input = NewTenant {
            slug: slug.into(),
            display_name: Some(name.into()),
        };
        self.on_server(|s| async move {
            s.kqueen
                .tenancy()
                .create_tenant(&Actor::system(), input)
                .await
        })
        .await
        .unwrap();
    }

    /// A client that keeps cookies, sends this portal's Origin (as browsers do on POST) and
    /// does not follow redirects.
    pub fn browser(&self) -> reqwest::Client {
        let mut headers = HeaderMap::new();
        headers.insert(ORIGIN, HeaderValue::from_str(&self.url).unwrap());
        reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .cookie_store(true)
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    /// Creates a local account (operator or not, member of `tenants` with `role`) and returns
    /// a logged-in browser for it.
    pub async fn user(
        &self,
        name: &str,
        operator: bool,
        tenants: &[(&str, &str)],
    ) -> reqwest::Client {
        let (n, grants): (String, Vec<(String, String)>) = (
            name.to_owned(),
            tenants
                .iter()
                .map(|(t, r)| (t.to_string(), r.to_string()))
                .collect(),
        );
        self.on_server(move |s| async move {
            s.kqueen
                .auth()
                .create_local_user(&Actor::system(), &n, PASSWORD, operator)
                .await
                .unwrap();
            for (tenant, role) in grants {
                let role = kqueen_core::identity::Role::parse(&role).unwrap();
                s.kqueen
                    .tenancy()
                    .put_member(&Actor::system(), &tenant, &n, role)
                    .await
                    .unwrap();
            }
        })
        .await;
        let browser = self.browser();
        let res = self.login(&browser, name, PASSWORD).await;
        assert_eq!(res.headers()["location"], "/", "login of {name}");
        browser
    }

    /// Calls the server function `/sfn/<endpoint>` as the portal's pages do (a form post) and
    /// returns its JSON answer.
    pub async fn server_fn(
        &self,
        browser: &reqwest::Client,
        endpoint: &str,
        form: &[(&str, &str)],
    ) -> serde_json::Value {
        let res = browser
            .post(format!("{}/sfn/{endpoint}", self.url))
            .form(form)
            .send()
            .await
            .unwrap();
        res.json().await.unwrap()
    }

    /// Posts the local login form.
    pub async fn login(
        &self,
        browser: &reqwest::Client,
        name: &str,
        password: &str,
    ) -> reqwest::Response {
        browser
            .post(format!("{}/auth/local", self.url))
            .form(&[("username", name), ("password", password), ("next", "/")])
            .send()
            .await
            .unwrap()
    }

    /// `GET <server><path>` with `client` (a logged-in browser, say).
    pub async fn get_as(&self, client: &reqwest::Client, path: &str) -> reqwest::Response {
        client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap()
    }

    /// Asks the server to shut down gracefully and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.server).await.unwrap().unwrap();
    }
}

/// What a server-rendered page hands to the browser in its hydration script: the JSON of
/// each resource, decoded from the base64 string literal Leptos writes for it
/// (`__RESOLVED_RESOURCES[i] = "…"`, see `app/src/hydrated.rs`). Panics where a literal is
/// not base64 of UTF-8 text.
pub fn page_data(html: &str) -> Vec<String> {
    use base64::Engine as _;
    html.split("__RESOLVED_RESOURCES[")
        .skip(1)
        .map(|s| {
            let literal = s.split_once("] = \"").expect("an index and a string").1;
            let literal = literal.split_once("\";").expect("a closed string").0;
            let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(literal)
                .unwrap_or_else(|e| panic!("not base64 ({e}): {literal}"));
            String::from_utf8(bytes).expect("UTF-8 text")
        })
        .collect()
}
