//! The `kqueen` binary's client commands against the real server, and kubectl (Debian's
//! kubernetes-client) using `kqueen get-token` as its credential plugin against a real
//! kube-apiserver imported as a cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, offer_import};
use crate::helpers::TestApp;
use kqueen_core::audit::AuditQuery;
use kqueen_testkit::apiserver::RealApiServer;

/// One person's machine: a home directory with their kqueen login and kubeconfig.
pub(crate) struct Laptop {
    home: tempfile::TempDir,
}

pub(crate) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Laptop {
    pub(crate) fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.home.path().join(".kube").join("config")
    }

    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("HOME", self.home.path())
            .env("KUBECONFIG", self.kubeconfig())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("KQUEEN_URL")
            .env_remove("KQUEEN_TOKEN")
            .env_remove("KQUEEN_CLIENT_CONFIG")
            .env_remove("KQUEEN_CONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    async fn run(&self, program: &Path, args: &[&str], stdin: Option<&str>) -> Ran {
        let mut cmd = self.command(program);
        cmd.args(args).stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let input = stdin.map(str::to_owned);
        tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().unwrap();
            if let Some(text) = input {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
            }
            let out = child.wait_with_output().unwrap();
            Ran {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .await
        .unwrap()
    }

    /// `kqueen args` running on its own, its standard output and error piped (for commands
    /// that wait on a person, such as a device login).
    pub(crate) fn spawn_kqueen(&self, args: &[&str]) -> std::process::Child {
        let mut cmd = self.command(Path::new(env!("CARGO_BIN_EXE_kqueen")));
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
    }

    pub(crate) async fn kqueen(&self, args: &[&str]) -> Ran {
        self.run(Path::new(env!("CARGO_BIN_EXE_kqueen")), args, None)
            .await
    }

    pub(crate) async fn kubectl(&self, kubectl: &Path, args: &[&str]) -> Ran {
        let mut all = vec!["--request-timeout=20s"];
        all.extend_from_slice(args);
        self.run(kubectl, &all, None).await
    }

    /// kubectl `args`, again while the API server answers Forbidden (at most 30 s): its RBAC
    /// cache may lag bindings just made, longer on a loaded machine (a 403 does not make
    /// kubectl ask the credential plugin again).
    pub(crate) async fn kubectl_once_allowed(&self, kubectl: &Path, args: &[&str]) -> Ran {
        let started = std::time::Instant::now();
        loop {
            let ran = self.kubectl(kubectl, args).await;
            if ran.code == 0
                || !ran.stderr.contains("Forbidden")
                || started.elapsed() > Duration::from_secs(30)
            {
                return ran;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `kqueen login` with a fresh API token of `who`.
    pub(crate) async fn login(&self, app: &TestApp, who: &reqwest::Client) {
        let (status, created) = call(
            who,
            app,
            Method::POST,
            "/api/v1/tokens",
            Some(json!({"name": "laptop", "days": 1})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let secret = created["secret"].as_str().unwrap();
        let ran = self
            .run(
                Path::new(env!("CARGO_BIN_EXE_kqueen")),
                &["login", &app.url, "--token-stdin"],
                Some(&format!("{secret}\n")),
            )
            .await;
        assert_eq!(ran.code, 0, "{ran:?}");
    }
}

/// kubectl from PATH, or None (the test then skips, saying why).
#[allow(clippy::print_stdout)]
pub(crate) fn kubectl() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("kubectl"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        println!("skipped: no kubectl on PATH (scripts/setup.sh installs kubernetes-client)");
    }
    found
}

async fn credential_issues(app: &TestApp, actor: &str) -> usize {
    let query = AuditQuery {
        actor: Some(actor.into()),
        ..AuditQuery::default()
    };
    app.audit(query)
        .await
        .iter()
        .filter(|e| {
            e.detail
                .as_deref()
                .is_some_and(|d| d.contains("credential plugin"))
        })
        .count()
}

#[tokio::test]
async fn the_cli_requests_a_cluster_and_kubectl_logs_in_through_get_token() {
    let Some(kubectl) = kubectl() else { return };
    let Some(kube) = RealApiServer::start().await else {
        return;
    };
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let bea = app.user("bea", false, &[("team-b", "member")]).await;
    offer_import(&app, &olga).await;

    let laptop = Laptop::new();
    // Before logging in: a clear message and exit code 3.
    let ran = laptop.kqueen(&["clusters", "list"]).await;
    assert_eq!(ran.code, 3, "{ran:?}");
    assert!(ran.stderr.contains("kqueen login"), "{ran:?}");
    // A wrong token is refused at login, and nothing is saved.
    let ran = laptop
        .run(
            Path::new(env!("CARGO_BIN_EXE_kqueen")),
            &["login", &app.url, "--token-stdin"],
            Some("kq_not-a-token\n"),
        )
        .await;
    assert_eq!(ran.code, 3, "{ran:?}");
    laptop.login(&app, &amy).await;
    let ran = laptop.kqueen(&["whoami", "-o", "json"]).await;
    let me: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(me["username"], "amy", "{ran:?}");

    // Request the real API server as a cluster, following it until Ready.
    let admin = laptop.home.path().join("admin.kubeconfig");
    std::fs::write(&admin, kube.admin_kubeconfig()).unwrap();
    let param = format!("kubeconfig=@{}", admin.display());
    let ran = laptop
        .kqueen(&[
            "clusters",
            "create",
            "prod",
            "--template",
            "import",
            "--param",
            &param,
            "--wait",
            "--timeout",
            "2",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stderr.contains("Ready"), "progress shown: {ran:?}");
    let detail: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(detail["state"], "ready", "{ran:?}");
    let id = detail["id"].as_str().unwrap().to_owned();

    let ran = laptop.kqueen(&["clusters", "list"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(lines[0].starts_with("TENANT"), "{ran:?}");
    assert!(
        lines[1].starts_with("team-a") && lines[1].contains("prod") && lines[1].contains(&id),
        "{ran:?}"
    );
    let ran = laptop
        .kqueen(&["clusters", "get", "team-a/prod", "-o", "yaml"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains(&format!("id: {id}")), "{ran:?}");
    // Refusals keep their kind: an imported cluster cannot be scaled (6), nor a missing
    // one found (5), nor a name taken twice (6).
    let ran = laptop
        .kqueen(&["clusters", "scale", "prod", "--nodes", "3"])
        .await;
    assert_eq!(ran.code, 6, "{ran:?}");
    let ran = laptop.kqueen(&["clusters", "get", "nope"]).await;
    assert_eq!(ran.code, 5, "{ran:?}");
    let ran = laptop
        .kqueen(&[
            "clusters",
            "create",
            "prod",
            "--template",
            "import",
            "--param",
            &param,
        ])
        .await;
    assert_eq!(ran.code, 6, "{ran:?}");

    // The cluster's page says how.
    let page = app
        .get_as(&amy, &format!("/clusters/{id}"))
        .await
        .text()
        .await
        .unwrap();
    let shown = format!(
        "kqueen login {}\nkqueen kubeconfig team-a/prod --exec",
        app.url
    );
    assert!(page.contains(&shown), "{page}");
    // A context whose credential kubectl fetches with `kqueen get-token`.
    let ran = laptop.kqueen(&["kubeconfig", "prod", "--exec"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let written = std::fs::read_to_string(laptop.kubeconfig()).unwrap();
    assert!(
        written.contains("get-token") && !written.contains("token:"),
        "{written}"
    );
    assert_eq!(credential_issues(&app, "amy").await, 1);
    for _ in 0..2 {
        let ran = laptop
            .kubectl_once_allowed(&kubectl, &["get", "configmaps", "-n", "default"])
            .await;
        assert_eq!(ran.code, 0, "{ran:?}");
    }
    // Both runs used the cached credential: no new token was asked for.
    assert_eq!(credential_issues(&app, "amy").await, 1);
    let ran = laptop
        .kubectl(&kubectl, &["get", "secrets", "-n", "kube-system"])
        .await;
    assert_ne!(ran.code, 0, "a member is no cluster admin: {ran:?}");
    assert!(ran.stderr.contains("forbidden"), "{ran:?}");
    assert!(
        ran.stderr
            .contains("system:serviceaccount:kqueen-users:amy-"),
        "{ran:?}"
    );

    // Nobody gets one without logging in.
    let anonymous = app
        .client
        .post(format!("{}/api/v1/clusters/{id}/credential", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    // Another tenant's member cannot get a credential for it.
    let bea_laptop = Laptop::new();
    bea_laptop.login(&app, &bea).await;
    let ran = bea_laptop
        .kqueen(&["get-token", "--cluster", &id, "--url", &app.url])
        .await;
    assert_eq!(ran.code, 5, "{ran:?}");
    let ran = bea_laptop.kqueen(&["kubeconfig", &id, "--exec"]).await;
    assert_eq!(ran.code, 5, "{ran:?}");

    // An operator's context carries the cluster's admin credential.
    let olga_laptop = Laptop::new();
    olga_laptop.login(&app, &olga).await;
    let ran = olga_laptop
        .kqueen(&["kubeconfig", "team-a/prod", "--exec"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = olga_laptop
        .kubectl(&kubectl, &["get", "secrets", "-n", "kube-system"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    // Fleet views: everything for operators, a tenant's own clusters for its members.
    let ran = olga_laptop
        .kqueen(&["fleet", "versions", "-o", "json"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let rows: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(rows[0]["api_version"], "v1.20.2", "{ran:?}");
    let ran = laptop.kqueen(&["fleet", "versions"]).await;
    assert!(ran.stdout.contains("v1.20.2"), "{ran:?}");
    let ran = bea_laptop.kqueen(&["fleet", "versions"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(ran.stdout.lines().count(), 1, "only the header: {ran:?}");

    // Access ends when amy leaves the tenant: the access sweep deletes her ServiceAccount,
    // so the cached token stops working, and the portal hands out no other.
    let (status, body) = call(
        &olga,
        &app,
        Method::DELETE,
        "/api/v1/tenants/team-a/members/amy",
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
    // First her bindings go (kubectl: Forbidden), then her ServiceAccount (its token no
    // longer authenticates: kubectl asks the plugin again, the portal refuses).
    let mut last = None;
    for _ in 0..60 {
        let ran = laptop
            .kubectl(&kubectl, &["get", "configmaps", "-n", "default"])
            .await;
        let ended = ran.code != 0 && !ran.stderr.contains("Forbidden");
        last = Some(ran);
        if ended {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let refused = last.unwrap();
    assert!(
        refused.code != 0 && refused.stderr.contains("not found: "),
        "the plugin's refusal reaches kubectl's user: {refused:?}"
    );
    // kubectl asked the plugin again after the 401, which asked the portal: refused, and
    // the cached credential is gone.
    let ran = laptop
        .kqueen(&["get-token", "--cluster", &id, "--url", &app.url])
        .await;
    assert_eq!(ran.code, 5, "{ran:?}");

    // A context written for another portal is refused with a clear message.
    let ran = olga_laptop
        .kqueen(&[
            "get-token",
            "--cluster",
            &id,
            "--url",
            "https://elsewhere.example",
        ])
        .await;
    assert_eq!(ran.code, 3, "{ran:?}");
    assert!(
        ran.stderr
            .contains("kqueen login https://elsewhere.example"),
        "{ran:?}"
    );

    // Deleting needs --yes; then the cluster is forgotten.
    let ran = olga_laptop.kqueen(&["clusters", "delete", &id]).await;
    assert_eq!(ran.code, 2, "{ran:?}");
    let ran = olga_laptop
        .kqueen(&["clusters", "delete", &id, "--yes"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = olga_laptop.kqueen(&["logout"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = olga_laptop.kqueen(&["clusters", "list"]).await;
    assert_eq!(ran.code, 3, "{ran:?}");
    app.stop().await;
}
