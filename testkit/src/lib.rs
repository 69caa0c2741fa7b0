//! Fresh databases for tests: a SQLite file in a temporary directory, or a new Postgres
//! database created on the server named by `KQUEEN_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`) and dropped when the value is dropped.
//!
//! Postgres tests fail when no server answers, so that a broken CI machine cannot pass by
//! skipping them; set `KQUEEN_TEST_SKIP_POSTGRES=1` to skip them on a laptop without one.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

/// A real kube-apiserver (with kube-controller-manager) like envtest starts it.
pub mod apiserver;
/// Cluster API CRDs and a controller that plays Cluster API against a real API server.
pub mod capi;
pub mod catalog;
/// Synthetic clusters for the fake API server.
pub mod fake_cluster;
/// A fake Jenkins (its remote-access API) for the `jenkins` provisioner.
pub mod fake_jenkins;
/// An in-process fake Kubernetes API server.
pub mod fake_kube;
pub mod hosted;
pub mod legacy;
/// A real node: containerd, the CNI bridge, local images and a kubelet joined by kubeadm.
pub mod node_lab;
pub mod people;
/// Processes that outlive their parent on purpose.
pub mod process;
/// A real S3-compatible server (moto) for backup archives.
pub mod s3_server;
/// A real etcd with TLS, client certificates and auth on (hosted control planes).
pub mod tls_etcd;
pub mod vault;
/// Bounded waits for what a test cannot be told about.
pub mod wait;

use sqlx::{Connection, PgConnection};

use kqueen_core::store::{connect, SqlStore};

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A database that exists for as long as this value.
pub struct TestDatabase {
    url: String,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

impl TestDatabase {
    /// A new SQLite database file in its own temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/kqueen.db", dir.path().display());
        Self {
            url,
            _dir: Some(dir),
            postgres: None,
        }
    }

    /// A new, empty Postgres database, or `None` (with the reason printed) when
    /// `KQUEEN_TEST_SKIP_POSTGRES=1`.
    pub async fn postgres() -> Option<Self> {
        if std::env::var("KQUEEN_TEST_SKIP_POSTGRES").as_deref() == Ok("1") {
            println!("SKIPPED: Postgres test (KQUEEN_TEST_SKIP_POSTGRES=1)");
            return None;
        }
        let admin = std::env::var("KQUEEN_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_PG.into());
        let name = format!("kqueen_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(&admin).await.unwrap_or_else(|e| {
            panic!("Postgres test database server unreachable at {admin} ({e}); set KQUEEN_TEST_SKIP_POSTGRES=1 to skip")
        });
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let _ = conn.close().await;
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
        let url = format!("{base}/{name}");
        Some(Self {
            url,
            _dir: None,
            postgres: Some((admin, name)),
        })
    }

    /// The database URL, as `KQUEEN_DATABASE_URL` takes it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens the store (migrating it).
    pub async fn connect(&self) -> SqlStore {
        connect(&self.url).await.unwrap()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some((admin, name)) = self.postgres.take() else {
            return;
        };
        // Drop runs inside the test's runtime: use a thread with a runtime of its own.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut conn = PgConnection::connect(&admin).await.ok()?;
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                sqlx::query(&sql).execute(&mut conn).await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("warning: could not drop a test database");
        }
    }
}
