//! A real kube-apiserver for tests, like controller-runtime's envtest: etcd (the binary from
//! the `etcd-bin-vendored` crate) plus the kube-apiserver binary named by
//! `KQUEEN_TEST_KUBE_APISERVER`, on loopback ports, with generated certificates (rcgen), a
//! static token file for an admin in `system:masters`, RBAC authorization,
//! ServiceAccount token signing (so the TokenRequest API works) and privileged pods allowed
//! (as on most clusters). When `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER` names the
//! kube-controller-manager binary it runs too, with the ServiceAccount token controller (so
//! ServiceAccounts get the long-lived token Secrets of clusters before 1.24, namespaces are
//! finalised and deleted); otherwise no controllers run.
//!
//! [`RealApiServer::start`] returns `None` (after printing why) when the variable is not set.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;

use crate::process::{free_port, log_file};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

pub const ENV: &str = "KQUEEN_TEST_KUBE_APISERVER";
pub const CONTROLLER_MANAGER_ENV: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";
pub const SCHEDULER_ENV: &str = "KQUEEN_TEST_KUBE_SCHEDULER";

/// etcd and kube-apiserver, stopped (apiserver first) when dropped.
pub struct RealApiServer {
    url: String,
    ca_pem: String,
    admin_token: String,
    dir: tempfile::TempDir,
    apiserver: Option<Child>,
    controller_manager: Option<Child>,
    scheduler: Option<Child>,
    etcd: Option<Child>,
}

impl RealApiServer {
    /// Starts etcd and kube-apiserver and waits until `/readyz` answers `ok` (bootstrap RBAC
    /// roles included), with every controller when kube-controller-manager is named. `None`
    /// when `KQUEEN_TEST_KUBE_APISERVER` is not set.
    pub async fn start() -> Option<Self> {
        Self::start_with_controllers("*").await
    }

    /// [`RealApiServer::start`] with only these controllers (kube-controller-manager's
    /// `--controllers`), e.g. without the Deployment controller when the test plays it.
    pub async fn start_with_controllers(controllers: &str) -> Option<Self> {
        let Ok(binary) = std::env::var(ENV) else {
            println!("skipped: {ENV} not set");
            return None;
        };
        let binary = PathBuf::from(binary);
        assert!(binary.is_file(), "{ENV}={} is not a file", binary.display());
        let dir = tempfile::tempdir().expect("temp dir");
        let etcd_bin =
            etcd_bin_vendored::etcd_bin_path().expect("an etcd binary for this platform");

        let client_port = free_port();
        let peer_port = free_port();
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd = Command::new(etcd_bin)
            .args([
                "--name=kqueen-test",
                &format!("--data-dir={}", dir.path().join("etcd").display()),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=kqueen-test={peer_url}"),
                "--log-level=warn",
                "--unsafe-no-fsync",
            ])
            .stdin(Stdio::null())
            .stdout(log_file(dir.path(), "etcd.log"))
            .stderr(log_file(dir.path(), "etcd.log"))
            .spawn()
            .expect("start etcd");
        let mut server = Self {
            url: String::new(),
            ca_pem: String::new(),
            admin_token: format!("admin-{}", uuid::Uuid::new_v4().simple()),
            dir,
            apiserver: None,
            controller_manager: None,
            scheduler: None,
            etcd: Some(etcd),
        };
        wait_for_tcp(client_port, Duration::from_secs(20), &server, "etcd.log").await;

        let certs = Certs::generate();
        let path = |name: &str| server.dir.path().join(name);
        fs::write(path("ca.crt"), &certs.ca_pem).expect("write");
        fs::write(path("serving.crt"), &certs.serving_pem).expect("write");
        fs::write(path("serving.key"), &certs.serving_key_pem).expect("write");
        fs::write(path("sa.key"), &certs.sa_key_pem).expect("write");
        fs::write(path("sa.pub"), &certs.sa_pub_pem).expect("write");
        fs::write(
            path("tokens.csv"),
            format!(
                "{},kqueen-admin,kqueen-admin-uid,\"system:masters\"\n",
                server.admin_token
            ),
        )
        .expect("write");
        fs::create_dir_all(path("cert-dir")).expect("mkdir");

        let port = free_port();
        let p = |name: &str| path(name).display().to_string();
        let apiserver = Command::new(&binary)
            .args([
                format!("--etcd-servers={etcd_url}"),
                format!(
                    "--etcd-prefix=/kqueen-test-{}",
                    uuid::Uuid::new_v4().simple()
                ),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={port}"),
                format!("--cert-dir={}", p("cert-dir")),
                format!("--tls-cert-file={}", p("serving.crt")),
                format!("--tls-private-key-file={}", p("serving.key")),
                format!("--token-auth-file={}", p("tokens.csv")),
                "--authorization-mode=RBAC".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!("--service-account-key-file={}", p("sa.pub")),
                format!("--service-account-signing-key-file={}", p("sa.key")),
                "--service-cluster-ip-range=10.0.0.0/24".into(),
                "--endpoint-reconciler-type=none".into(),
                "--disable-admission-plugins=ServiceAccount".into(),
                "--allow-privileged=true".into(),
            ])
            .stdin(Stdio::null())
            .stdout(log_file(server.dir.path(), "apiserver.log"))
            .stderr(log_file(server.dir.path(), "apiserver.log"))
            .spawn()
            .expect("start kube-apiserver");
        server.apiserver = Some(apiserver);
        server.url = format!("https://127.0.0.1:{port}");
        server.ca_pem = certs.ca_pem;
        server.wait_ready(Duration::from_secs(60)).await;
        server.start_controller_manager(controllers);
        Some(server)
    }

    /// Starts kube-scheduler (`KQUEEN_TEST_KUBE_SCHEDULER`) beside the API server, so that
    /// pods are bound to nodes, or marked Unschedulable when none has room. False (after
    /// printing why) when the variable is not set.
    pub fn start_scheduler(&mut self) -> bool {
        let Ok(binary) = std::env::var(SCHEDULER_ENV) else {
            println!("skipped: {SCHEDULER_ENV} not set");
            return false;
        };
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        fs::write(path("scheduler.kubeconfig"), self.admin_kubeconfig()).expect("write");
        let child = Command::new(&binary)
            .args([
                format!("--kubeconfig={}", path("scheduler.kubeconfig")),
                // No insecure port (1.20 serves 10251 by default) and no secure one: two test
                // servers at once would collide.
                "--port=0".into(),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
            ])
            .stdin(Stdio::null())
            .stdout(log_file(self.dir.path(), "scheduler.log"))
            .stderr(log_file(self.dir.path(), "scheduler.log"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        self.scheduler = Some(child);
        true
    }

    /// The scheduler's log so far (for failure messages).
    pub fn scheduler_log(&self) -> String {
        tail(self.dir.path(), "scheduler.log")
    }

    /// Whether kube-controller-manager runs beside the API server.
    pub fn has_controller_manager(&self) -> bool {
        self.controller_manager.is_some()
    }

    fn start_controller_manager(&mut self, controllers: &str) {
        let Ok(binary) = std::env::var(CONTROLLER_MANAGER_ENV) else {
            println!("note: {CONTROLLER_MANAGER_ENV} not set: no controllers run");
            return;
        };
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        fs::write(path("admin.kubeconfig"), self.admin_kubeconfig()).expect("write");
        let child = Command::new(&binary)
            .args([
                format!("--kubeconfig={}", path("admin.kubeconfig")),
                format!("--service-account-private-key-file={}", path("sa.key")),
                format!("--root-ca-file={}", path("ca.crt")),
                // 1.20 also serves an insecure port (10252) by default: two test servers
                // at once would collide on it.
                "--port=0".into(),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                format!("--controllers={controllers}"),
            ])
            .stdin(Stdio::null())
            .stdout(log_file(self.dir.path(), "controller-manager.log"))
            .stderr(log_file(self.dir.path(), "controller-manager.log"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        self.controller_manager = Some(child);
    }

    /// The controller manager's log so far (for failure messages).
    pub fn controller_manager_log(&self) -> String {
        tail(self.dir.path(), "controller-manager.log")
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The cluster CA as in kubeconfigs (base64 of PEM).
    pub fn ca_data(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// A kubeconfig for the admin (context `real`).
    pub fn admin_kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {}\nusers:\n- name: admin\n  user:\n    token: {}\n\
             contexts:\n- name: real\n  context:\n    cluster: real\n    user: admin\n\
             current-context: real\n",
            self.url,
            self.ca_data(),
            self.admin_token
        )
    }

    async fn wait_ready(&mut self, limit: Duration) {
        let parsed =
            kqueen_core::kubernetes::parse_kubeconfig(&self.admin_kubeconfig(), None, false)
                .expect("admin kubeconfig");
        let started = Instant::now();
        loop {
            if let Some(child) = self.apiserver.as_mut() {
                if let Ok(Some(exit)) = child.try_wait() {
                    panic!(
                        "kube-apiserver exited ({exit}):\n{}",
                        tail(self.dir.path(), "apiserver.log")
                    );
                }
            }
            let ready = async {
                let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(2))
                    .await
                    .ok()?;
                let request = http::Request::get("/readyz").body(Vec::new()).ok()?;
                client.request_text(request).await.ok()
            };
            if ready.await.as_deref().map(str::trim) == Some("ok") {
                return;
            }
            assert!(
                started.elapsed() < limit,
                "kube-apiserver not ready after {limit:?}:\n{}",
                tail(self.dir.path(), "apiserver.log")
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for RealApiServer {
    fn drop(&mut self) {
        // kube-apiserver before etcd: it hangs on shutdown when etcd is already gone.
        for child in [
            self.scheduler.take(),
            self.controller_manager.take(),
            self.apiserver.take(),
            self.etcd.take(),
        ]
        .into_iter()
        .flatten()
        {
            stop(child);
        }
    }
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

struct Certs {
    ca_pem: String,
    serving_pem: String,
    serving_key_pem: String,
    sa_key_pem: String,
    sa_pub_pem: String,
}

impl Certs {
    fn generate() -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kqueen-test-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate().expect("serving key");
        let mut serving_params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("serving params");
        serving_params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let serving = serving_params
            .signed_by(&serving_key, &issuer)
            .expect("serving cert");

        let sa_key = KeyPair::generate().expect("SA key");
        Self {
            ca_pem: ca_cert.pem(),
            serving_pem: serving.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            sa_key_pem: sa_key.serialize_pem(),
            sa_pub_pem: sa_key.public_key_pem(),
        }
    }
}

async fn wait_for_tcp(port: u16, limit: Duration, server: &RealApiServer, log: &str) {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < limit,
            "nothing listens on port {port} after {limit:?}:\n{}",
            tail(server.dir.path(), log)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last few kilobytes of a log file.
fn tail(dir: &Path, name: &str) -> String {
    let Ok(mut file) = fs::File::open(dir.join(name)) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(8 * 1024)));
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    text
}
