//! A real S3-compatible server for tests: moto's server mode (PyPI `moto[s3]`, pinned in
//! scripts/versions.env and installed by `scripts/setup.sh test` into target/moto/, linked as
//! target/moto/moto_server; or the program `KQUEEN_TEST_MOTO_SERVER` names) on a free
//! loopback port, killed on drop.
//!
//! Set up without authentication (an IAM user allowed `s3:*` with its access key, buckets),
//! then with authentication on, as a real store: requests must be signed with a known access
//! key and its secret. Listing a bucket here is the server's own API, unsigned (it turns
//! authentication off for that request and back on), so a test checks object keys without
//! the client under test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{free_port, log_file};

/// The variable naming the `moto_server` program to use instead of target/moto's.
pub const ENV: &str = "KQUEEN_TEST_MOTO_SERVER";

/// An access key of the server's IAM.
#[derive(Clone)]
pub struct AccessKey {
    pub id: String,
    pub secret: String,
}

pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    http: reqwest::Client,
    dir: tempfile::TempDir,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server program, or `None` (with the reason printed) when it is not installed.
fn program() -> Option<PathBuf> {
    if let Ok(named) = std::env::var(ENV) {
        return Some(named.into());
    }
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/moto/moto_server");
    if installed.is_file() {
        return Some(installed);
    }
    println!(
        "skipped: no S3 test server ({} missing: `scripts/setup.sh test` installs moto there, \
         or set {ENV})",
        installed.display()
    );
    None
}

/// What `<Tag>…</Tag>` holds in `xml`, each time it occurs.
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(open.as_str())
        .skip(1)
        .filter_map(|rest| rest.split_once(close.as_str()).map(|(v, _)| v))
        .collect()
}

impl S3Server {
    /// Starts the server with authentication off; `None` when it is not installed.
    pub async fn start() -> Option<Self> {
        let program = program()?;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log_file(dir.path(), "moto.log"))
            .stderr(log_file(dir.path(), "moto.log"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let mut server = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            dir,
        };
        server.ready().await;
        Some(server)
    }

    async fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                break;
            }
            let health = self
                .http
                .get(format!("{}/moto-api/", self.endpoint))
                .send()
                .await;
            if health.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(self.dir.path().join("moto.log")).unwrap_or_default();
        panic!("the S3 test server did not start:\n{log}");
    }

    /// Turns signature and permission checks on or off for the requests that follow.
    pub async fn authenticate(&self, on: bool) {
        let after = if on { "0" } else { "inf" };
        let r = self
            .http
            .post(format!("{}/moto-api/reset-auth", self.endpoint))
            .body(after)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "reset-auth: {}", r.status());
    }

    /// An IAM request (authentication off: its signature is not checked, its scope names
    /// the service).
    async fn iam(&self, params: &[(&str, &str)]) -> String {
        let r = self
            .http
            .post(&self.endpoint)
            .header(
                "Authorization",
                "AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/iam/aws4_request, \
                 SignedHeaders=host, Signature=0",
            )
            .form(&[params, &[("Version", "2010-05-08")]].concat())
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        assert!(status.is_success(), "IAM {params:?}: {status} {body}");
        body
    }

    /// A new IAM user `name` allowed every S3 action on every bucket, and its access key.
    /// Authentication must be off.
    pub async fn user_with_s3_access(&self, name: &str) -> AccessKey {
        self.iam(&[("Action", "CreateUser"), ("UserName", name)])
            .await;
        let policy = r#"{"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}"#;
        self.iam(&[
            ("Action", "PutUserPolicy"),
            ("UserName", name),
            ("PolicyName", "s3"),
            ("PolicyDocument", policy),
        ])
        .await;
        let created = self
            .iam(&[("Action", "CreateAccessKey"), ("UserName", name)])
            .await;
        let one = |tag| elements(&created, tag).first().map(|v| (*v).to_owned());
        AccessKey {
            id: one("AccessKeyId").expect("an access key id"),
            secret: one("SecretAccessKey").expect("a secret access key"),
        }
    }

    /// Creates `bucket`. Authentication must be off.
    pub async fn create_bucket(&self, bucket: &str) {
        let r = self
            .http
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "create bucket: {}", r.status());
    }

    /// The keys of every object in `bucket` (ListObjectsV2, unsigned: authentication is
    /// turned off for it and on again).
    pub async fn keys(&self, bucket: &str) -> Vec<String> {
        self.authenticate(false).await;
        let r = self
            .http
            .get(format!("{}/{bucket}?list-type=2", self.endpoint))
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        self.authenticate(true).await;
        assert!(status.is_success(), "list {bucket}: {status} {body}");
        elements(&body, "Key")
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}
