//! A throw-away etcd as a shared multi-tenant etcd runs: TLS on the client port, client
//! certificates required (`--client-cert-auth`) and auth enabled, with `root` known by its
//! certificate's common name. The official binary from `etcd-bin-vendored`, on free
//! loopback ports, data in a temporary directory; killed on drop.
//!
//! Two CAs, as a provider configures them: the server CA (what clients verify etcd with) and
//! the client CA (what etcd trusts client certificates from; KQueen signs each control plane's
//! certificate with it).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kqueen_core::hosted::etcd::EtcdAccess;
use kqueen_core::hosted::pki::{Authority, CertKey};

use crate::process::free_port;

pub struct TlsEtcd {
    child: Child,
    pub endpoint: String,
    pub server_ca: Authority,
    pub client_ca: Authority,
    dir: tempfile::TempDir,
}

impl Drop for TlsEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TlsEtcd {
    /// Starts etcd on 127.0.0.1 and enables auth with `root` (by certificate) as its
    /// administrator.
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1").await
    }

    /// Starts etcd listening for clients on `address` (one of this host's: the node lab's
    /// gateway, where pods reach it), its certificate naming that address too.
    pub async fn start_on(address: &str) -> Self {
        let bin = etcd_bin_vendored::etcd_bin_path().expect("an etcd binary");
        for _ in 0..5 {
            let server_ca = Authority::generate("test etcd server CA", 30).unwrap();
            let client_ca = Authority::generate("test etcd client CA", 30).unwrap();
            let mut names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
            if !names.iter().any(|n| n == address) {
                names.push(address.to_owned());
            }
            let serving = server_ca.server("etcd", &names, 30).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let write = |name: &str, body: &[u8]| {
                let path = dir.path().join(name);
                std::fs::write(&path, body).unwrap();
                path.display().to_string()
            };
            let cert = write("server.pem", serving.cert_pem.as_bytes());
            let key = write("server-key.pem", serving.key_pem.expose());
            let trusted = write("client-ca.pem", client_ca.cert_key().cert_pem.as_bytes());
            let (client, peer) = (free_port(), free_port());
            let endpoint = format!("https://{address}:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let child = Command::new(bin)
                .arg("--name=kq")
                .arg(format!("--data-dir={}", dir.path().join("data").display()))
                .arg(format!("--listen-client-urls={endpoint}"))
                .arg(format!("--advertise-client-urls={endpoint}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster=kq={peer_url}"))
                .arg(format!("--cert-file={cert}"))
                .arg(format!("--key-file={key}"))
                .arg(format!("--trusted-ca-file={trusted}"))
                .arg("--client-cert-auth")
                .arg("--log-level=error")
                .arg("--unsafe-no-fsync")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut etcd = TlsEtcd {
                child,
                endpoint,
                server_ca,
                client_ca,
                dir,
            };
            if let Some(mut root) = etcd.ready().await {
                let no_password = etcd_client::UserAddOptions::new().with_no_pwd();
                root.user_add("root", "", Some(no_password)).await.unwrap();
                root.user_grant_role("root", "root").await.unwrap();
                root.auth_enable().await.unwrap();
                return etcd;
            }
        }
        panic!("etcd did not start");
    }

    async fn ready(&mut self) -> Option<etcd_client::Client> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let root = self.client_cert("root");
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return None;
            }
            if let Ok(mut c) = self.raw(&root).await {
                if c.get("ready-probe", None).await.is_ok() {
                    return Some(c);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// A client certificate for etcd user `user`, signed by the client CA.
    pub fn client_cert(&self, user: &str) -> CertKey {
        self.client_ca.client(user, None, 30).unwrap()
    }

    /// How KQueen reaches this etcd as root.
    pub fn root_access(&self) -> EtcdAccess {
        EtcdAccess {
            endpoints: vec![self.endpoint.clone()],
            server_ca_pem: self.server_ca.cert_key().cert_pem.clone(),
            client: self.client_cert("root"),
        }
    }

    /// What a hosted provider's settings say of this etcd (field → value): its endpoint,
    /// server CA, client CA and key, and a root certificate and key for KQueen.
    pub fn provider_settings(&self) -> Vec<(&'static str, String)> {
        let root = self.root_access();
        let client_ca = self.client_ca.cert_key();
        let text = |s: &kqueen_core::vault::Secret| String::from_utf8(s.expose().to_vec()).unwrap();
        vec![
            ("etcd_endpoints", self.endpoint.clone()),
            ("etcd_ca", root.server_ca_pem),
            ("etcd_client_ca", client_ca.cert_pem.clone()),
            ("etcd_client_ca_key", text(&client_ca.key_pem)),
            ("etcd_admin_cert", root.client.cert_pem.clone()),
            ("etcd_admin_key", text(&root.client.key_pem)),
        ]
    }

    /// A plain etcd client authenticated by `cert`.
    pub async fn raw(&self, cert: &CertKey) -> Result<etcd_client::Client, etcd_client::Error> {
        let key = std::str::from_utf8(cert.key_pem.expose()).unwrap();
        let tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(
                &self.server_ca.cert_key().cert_pem,
            ))
            .identity(etcd_client::Identity::from_pem(&cert.cert_pem, key));
        let options = etcd_client::ConnectOptions::new()
            .with_tls(tls)
            .with_connect_timeout(Duration::from_millis(500))
            .with_timeout(Duration::from_secs(2));
        etcd_client::Client::connect([&self.endpoint], Some(options)).await
    }

    /// Files for a process that reaches etcd (kube-apiserver): the server CA, a client
    /// certificate and its key, written into this etcd's directory.
    pub fn client_files(&self, name: &str, cert: &CertKey) -> (String, String, String) {
        let write = |file: String, body: &[u8]| {
            let path = self.dir.path().join(file);
            std::fs::write(&path, body).unwrap();
            path.display().to_string()
        };
        (
            write(
                "server-ca.pem".into(),
                self.server_ca.cert_key().cert_pem.as_bytes(),
            ),
            write(format!("{name}.pem"), cert.cert_pem.as_bytes()),
            write(format!("{name}-key.pem"), cert.key_pem.expose()),
        )
    }
}
