//! The `command` provisioner against real shell scripts: environment, output streaming and
//! the `::step` / `::progress` protocol, failures, timeouts that kill the whole process group,
//! no shell unless asked, delete, scale and upgrade.
//!
//! Scripts run as `/bin/sh <file>` rather than being executed themselves: a freshly written
//! executable can fail with ETXTBSY while other test threads fork.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kqueen_core::provisioner::command::{CommandOptions, CommandProvisioner};
use kqueen_core::provisioner::{
    OpContext, Params, ProvisionError, Provisioner, Report, Reporter, Step,
};
use tokio::sync::mpsc;
use uuid::Uuid;

const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: kq
clusters:
- name: kq
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: kq
  context:
    cluster: kq
    user: admin
users:
- name: admin
  user:
    token: not-a-real-token
";

struct Fixture {
    dir: tempfile::TempDir,
    rx: mpsc::UnboundedReceiver<Report>,
    ctx: OpContext,
}

impl Fixture {
    fn new(config: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let mut ctx = OpContext::new("c1", "acme", dir.path().join("work/c1"));
        ctx.cluster_id = Uuid::now_v7();
        ctx.operation_id = Uuid::now_v7();
        ctx.reporter = Reporter::new(tx);
        ctx.provider_config = params(config);
        Self { dir, rx, ctx }
    }

    /// Writes a script into the temp dir (outside the work dir) and returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        path
    }

    fn set(&mut self, name: &str, value: &str) {
        self.ctx
            .provider_config
            .insert(name.to_owned(), value.to_owned());
    }

    fn work_dir(&self) -> PathBuf {
        self.ctx.work_dir.clone()
    }

    fn reports(&mut self) -> Vec<Report> {
        let mut out = Vec::new();
        while let Ok(r) = self.rx.try_recv() {
            out.push(r);
        }
        out
    }
}

fn params(pairs: &[(&str, &str)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn provisioner() -> CommandProvisioner {
    CommandProvisioner::new(CommandOptions::default())
}

fn logs(reports: &[Report]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Log(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

fn failed(r: Result<Step<()>, ProvisionError>) -> String {
    match r {
        Err(ProvisionError::Failed(m)) => m,
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// True while `pid` is a live process (a zombie waiting for its reaper counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

async fn gone_soon(pid: u32) -> bool {
    for _ in 0..40 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn create_streams_output_and_hands_back_the_kubeconfig() {
    let mut f = Fixture::new(&[]);
    let script = f.script(
        "create.sh",
        &format!(
            r#"set -eu
echo run >> "$KQ_WORK_DIR/runs"
echo "::step Preparing machines"
echo "action=$KQ_ACTION name=$KQ_CLUSTER_NAME tenant=$KQ_TENANT id=$KQ_CLUSTER_ID"
echo "nodes=$KQ_PARAM_NODE_COUNT version=$KQ_PARAM_KUBERNETES_VERSION region=$KQ_PARAM_REGION"
echo "::progress 50"
echo "warning: slow disk" >&2
echo "cwd=$(pwd) work=$KQ_WORK_DIR"
env > "$KQ_WORK_DIR/env"
cat > "$KQ_KUBECONFIG" <<'EOF'
{KUBECONFIG}EOF
echo "arg=$1"
echo "::progress 100"
echo done
"#
        ),
    );
    // Without a shell, `$HOME` is a literal argument.
    f.set(
        "create_command",
        &format!("/bin/sh {} $HOME", script.display()),
    );
    f.ctx.params = params(&[
        ("node_count", "3"),
        ("kubernetes_version", "1.33"),
        ("region", "eu-1"),
    ]);
    let p = provisioner();

    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    assert_eq!(f.ctx.checkpoint["finished"], "create");
    let work = f.work_dir();
    let reports = f.reports();
    let stdout: Vec<Report> = reports
        .iter()
        .filter(|r| !matches!(r, Report::Log(l) if l.starts_with("stderr: ")))
        .cloned()
        .collect();
    assert_eq!(
        stdout,
        vec![
            Report::Step("Running the create command".into()),
            Report::Step("Preparing machines".into()),
            Report::Log(format!(
                "action=create name=c1 tenant=acme id={}",
                f.ctx.cluster_id
            )),
            Report::Log("nodes=3 version=1.33 region=eu-1".into()),
            Report::Progress(50),
            Report::Log(format!("cwd={0} work={0}", work.display())),
            Report::Log("arg=$HOME".into()),
            Report::Progress(100),
            Report::Log("done".into()),
        ]
    );
    assert!(reports.contains(&Report::Log("stderr: warning: slow disk".into())));

    // The environment: cleared but for the basics and KQueen's variables.
    let env = std::fs::read_to_string(work.join("env")).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    for name in &names {
        assert!(
            name.starts_with("KQ_")
                || ["PATH", "HOME", "LANG", "TMPDIR", "PWD", "OLDPWD", "SHLVL", "_"].contains(name),
            "unexpected variable {name}"
        );
    }
    assert!(env.contains(&format!(
        "KQ_KUBECONFIG={}",
        work.join("kubeconfig").display()
    )));
    assert!(env.contains(&format!("KQ_OPERATION_ID={}", f.ctx.operation_id)));
    assert!(
        !names.contains(&"KQ_NODE_COUNT"),
        "only scale sets a target"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&work).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the work dir holds an admin kubeconfig");
    }

    let provisioned = p.kubeconfig(&mut f.ctx).await.unwrap();
    assert_eq!(provisioned.kubeconfig.expose(), KUBECONFIG.as_bytes());
    assert_eq!(
        provisioned.endpoint.as_deref(),
        Some("https://127.0.0.1:6443")
    );
    assert_eq!(provisioned.state["work_dir"], work.display().to_string());
    assert!(!format!("{provisioned:?}").contains("not-a-real-token"));

    // Resumed after it finished: the checkpoint says so, the command does not run again.
    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    assert_eq!(std::fs::read_to_string(work.join("runs")).unwrap(), "run\n");
    // A new operation (fresh checkpoint) runs it again: installers are idempotent.
    f.ctx.checkpoint = serde_json::Value::Null;
    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    assert_eq!(
        std::fs::read_to_string(work.join("runs")).unwrap(),
        "run\nrun\n"
    );
}

#[tokio::test]
async fn a_shell_only_when_asked() {
    let mut f = Fixture::new(&[
        ("create_command", r#"echo "arg=$HOME" | tr a-z A-Z"#),
        ("shell", "true"),
    ]);
    let p = provisioner();
    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(logs(&f.reports()).contains(&format!("ARG={}", home.to_uppercase())));

    // The same line without a shell is refused before anything runs.
    let no_shell = params(&[("create_command", r#"echo "arg=$HOME" | tr a-z A-Z"#)]);
    let e = p.check_provider(&no_shell).unwrap_err();
    assert_eq!(e.field, "create_command");
    assert!(e.message.contains("shell operator"), "{e}");
    let mut g = Fixture::new(&[("create_command", r#"echo "arg=$HOME" | tr a-z A-Z"#)]);
    assert!(failed(p.create(&mut g.ctx).await).contains("shell operator"));
}

#[tokio::test]
async fn failures_carry_the_last_stderr_line() {
    let mut f = Fixture::new(&[]);
    let script = f.script(
        "fail.sh",
        "echo starting\necho 'first problem' >&2\necho 'disk full' >&2\necho bye\nexit 3\n",
    );
    f.set("create_command", &format!("/bin/sh {}", script.display()));
    let p = provisioner();
    assert_eq!(
        failed(p.create(&mut f.ctx).await),
        "create command exited with status 3: disk full"
    );
    assert!(f.ctx.checkpoint.is_null(), "not recorded as finished");
    let logs = logs(&f.reports());
    assert!(logs.contains(&"stderr: first problem".to_owned()));
    assert!(logs.contains(&"bye".to_owned()));

    let silent = f.script("silent.sh", "exit 4\n");
    f.set("create_command", &format!("/bin/sh {}", silent.display()));
    assert_eq!(
        failed(p.create(&mut f.ctx).await),
        "create command exited with status 4"
    );

    let killed = f.script("killed.sh", "kill -9 $$\n");
    f.set("create_command", &format!("/bin/sh {}", killed.display()));
    assert_eq!(
        failed(p.create(&mut f.ctx).await),
        "create command was killed by signal 9"
    );

    f.set("create_command", "/nonexistent/installer up");
    let m = failed(p.create(&mut f.ctx).await);
    assert!(
        m.contains("could not be started") && m.contains("/nonexistent/installer"),
        "{m}"
    );

    // No kubeconfig written, or not a kubeconfig: clear reasons that never quote the file.
    let mut ctx = f.ctx.clone();
    ctx.work_dir = f.dir.path().join("empty");
    let Err(ProvisionError::Failed(m)) = p.kubeconfig(&mut ctx).await else {
        panic!("missing kubeconfig accepted");
    };
    assert_eq!(m, "the create command did not write $KQ_KUBECONFIG");
    std::fs::create_dir_all(&ctx.work_dir).unwrap();
    std::fs::write(ctx.work_dir.join("kubeconfig"), "clusters: [sekrit-token\n").unwrap();
    let Err(ProvisionError::Failed(m)) = p.kubeconfig(&mut ctx).await else {
        panic!("garbage accepted");
    };
    assert!(m.contains("does not parse") && !m.contains("sekrit"), "{m}");
    std::fs::write(ctx.work_dir.join("kubeconfig"), "kind: Config\n").unwrap();
    let Err(ProvisionError::Failed(m)) = p.kubeconfig(&mut ctx).await else {
        panic!("a kubeconfig without a context accepted");
    };
    assert!(m.contains("no current context"), "{m}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let mut f = Fixture::new(&[("timeout_seconds", "1")]);
    // Ignores SIGTERM (and so does its background child): only SIGKILL stops them.
    let script = f.script(
        "hang.sh",
        r#"trap '' TERM
echo $$ > "$KQ_WORK_DIR/pid"
sleep 30 &
echo $! > "$KQ_WORK_DIR/bgpid"
echo started
wait
"#,
    );
    f.set("create_command", &format!("/bin/sh {}", script.display()));
    let p = CommandProvisioner::new(CommandOptions {
        kill_grace: Duration::from_millis(300),
        ..CommandOptions::default()
    });
    let started = Instant::now();
    assert_eq!(
        failed(p.create(&mut f.ctx).await),
        "create command timed out after 1 s"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    let work = f.work_dir();
    let (pid, bg) = (read_pid(&work.join("pid")), read_pid(&work.join("bgpid")));
    assert!(gone_soon(pid).await, "the command survived");
    assert!(gone_soon(bg).await, "its background child survived");
    let logs = logs(&f.reports());
    assert!(logs.contains(&"started".to_owned()));
    assert!(logs
        .iter()
        .any(|l| l.contains("ran past its timeout of 1 s")));
}

#[tokio::test]
async fn a_cancelled_run_leaves_nothing_running() {
    let mut f = Fixture::new(&[]);
    let script = f.script(
        "long.sh",
        "sleep 30 &\necho $! > \"$KQ_WORK_DIR/bgpid\"\nwait\n",
    );
    f.set("create_command", &format!("/bin/sh {}", script.display()));
    let p = provisioner();
    let bgpid = f.work_dir().join("bgpid");
    let run = p.create(&mut f.ctx);
    let wait_for_pid = async {
        while !std::fs::read_to_string(&bgpid).is_ok_and(|s| s.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        r = run => panic!("finished early: {r:?}"),
        () = wait_for_pid => {}
    }
    // `run` is dropped here, as when the engine cancels an operation.
    assert!(gone_soon(read_pid(&bgpid)).await);
}

#[tokio::test]
async fn delete_scale_and_upgrade() {
    let mut f = Fixture::new(&[]);
    let script = f.script(
        "ops.sh",
        "echo \"$KQ_ACTION nodes=${KQ_NODE_COUNT:-} version=${KQ_KUBERNETES_VERSION:-}\"\n",
    );
    let line = format!("/bin/sh {}", script.display());
    f.set("create_command", &line);
    let p = provisioner();
    let caps = p.capabilities();
    assert!(caps.scale && caps.upgrade && caps.deletes_infrastructure);

    // Without delete/scale/upgrade commands.
    assert!(matches!(p.delete(&mut f.ctx).await, Ok(Step::Done(()))));
    assert!(logs(&f.reports())
        .iter()
        .any(|l| l.contains("no delete command")));
    assert_eq!(
        failed(p.scale(&mut f.ctx, 3).await),
        "the provider has no scale command"
    );
    assert_eq!(
        failed(p.upgrade(&mut f.ctx, "1.34").await),
        "the provider has no upgrade command"
    );

    f.set("delete_command", &line);
    f.set("scale_command", &line);
    f.set("upgrade_command", &line);
    assert!(matches!(p.scale(&mut f.ctx, 3).await, Ok(Step::Done(()))));
    assert_eq!(f.ctx.checkpoint["finished"], "scale");
    assert!(logs(&f.reports()).contains(&"scale nodes=3 version=".to_owned()));

    f.ctx.checkpoint = serde_json::Value::Null;
    assert!(matches!(
        p.upgrade(&mut f.ctx, "1.34.1").await,
        Ok(Step::Done(()))
    ));
    assert!(logs(&f.reports()).contains(&"upgrade nodes= version=1.34.1".to_owned()));
    f.ctx.checkpoint = serde_json::Value::Null;
    assert!(
        failed(p.upgrade(&mut f.ctx, "1.34; rm -rf /").await).contains("not a Kubernetes version")
    );

    f.ctx.checkpoint = serde_json::Value::Null;
    assert!(matches!(p.delete(&mut f.ctx).await, Ok(Step::Done(()))));
    assert!(logs(&f.reports()).contains(&"delete nodes= version=".to_owned()));
}

#[tokio::test]
async fn the_secret_environment_reaches_every_command() {
    let mut f = Fixture::new(&[]);
    let script = f.script(
        "create.sh",
        "test \"$CLOUD_TOKEN\" = 's3 cr3t' && echo token-ok\n",
    );
    f.set("create_command", &format!("/bin/sh {}", script.display()));
    f.ctx.provider_secrets.insert(
        "environment".into(),
        kqueen_core::vault::Secret::new("CLOUD_TOKEN=s3 cr3t\n"),
    );
    let p = provisioner();
    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    assert!(logs(&f.reports()).contains(&"token-ok".to_owned()));
    // A broken one fails the operation without quoting it.
    f.ctx.checkpoint = serde_json::Value::Null;
    f.ctx
        .provider_secrets
        .insert("environment".into(), kqueen_core::vault::Secret::new("bad"));
    let why = failed(p.create(&mut f.ctx).await);
    assert!(why.contains("secret environment line 1"), "{why}");
}

#[tokio::test]
async fn the_kubeconfig_is_on_disk_only_while_a_command_needs_it() {
    let mut f = Fixture::new(&[]);
    let create = f.script(
        "create.sh",
        &format!("cat > \"$KQ_KUBECONFIG\" <<'EOF'\n{KUBECONFIG}EOF\n"),
    );
    let scale = f.script(
        "scale.sh",
        "set -eu\ntest -f \"$KQ_KUBECONFIG\"\necho \"mode=$(stat -c %a \"$KQ_KUBECONFIG\") $(grep -c server: \"$KQ_KUBECONFIG\")\"\n",
    );
    f.set("create_command", &format!("/bin/sh {}", create.display()));
    f.set("scale_command", &format!("/bin/sh {}", scale.display()));
    let p = provisioner();
    assert!(matches!(p.create(&mut f.ctx).await, Ok(Step::Done(()))));
    let provisioned = p.kubeconfig(&mut f.ctx).await.unwrap();
    let file = f.work_dir().join("kubeconfig");
    assert!(file.exists(), "read from where create wrote it");
    // Sealed in the vault: the plaintext copy goes.
    p.kubeconfig_stored(&f.ctx).await;
    assert!(!file.exists());

    // A later command gets the stored kubeconfig for the length of its run.
    f.ctx.checkpoint = serde_json::Value::Null;
    f.ctx.admin_kubeconfig = Some(provisioned.kubeconfig);
    assert!(matches!(p.scale(&mut f.ctx, 2).await, Ok(Step::Done(()))));
    assert!(logs(&f.reports()).contains(&"mode=600 1".to_owned()));
    assert!(!file.exists(), "removed after the run");
}

#[test]
fn schemas_and_provider_checks() {
    // What a provider can do follows the commands it has.
    let p = provisioner();
    let caps = p.capabilities_for(&params(&[
        ("create_command", "make"),
        ("scale_command", "x"),
    ]));
    assert!(caps.scale && !caps.upgrade && !caps.deletes_infrastructure);
    let caps = p.capabilities_for(&params(&[
        ("delete_command", "rm"),
        ("upgrade_command", "up"),
        ("scale_command", " "),
    ]));
    assert!(!caps.scale && caps.upgrade && caps.deletes_infrastructure);
    assert!(!p.allows_exec(&params(&[("allow_exec", "true")])));
    let p = provisioner();
    let provider = p.provider_schema();
    provider.check().unwrap();
    let v = provider
        .validate(&params(&[("create_command", "kind create cluster")]))
        .unwrap();
    assert_eq!(v["shell"], "false");
    assert_eq!(v["timeout_seconds"], "1800");
    assert!(
        provider.validate(&params(&[])).is_err(),
        "create_command is required"
    );
    assert!(provider
        .validate(&params(&[
            ("create_command", "x"),
            ("timeout_seconds", "0")
        ]))
        .is_err());
    assert!(provider
        .validate(&params(&[
            ("create_command", "x"),
            ("timeout_seconds", "86401")
        ]))
        .is_err());
    assert!(provider
        .validate(&params(&[("create_command", &"x".repeat(2001))]))
        .is_err());

    let cluster = p.cluster_schema();
    cluster.check().unwrap();
    let v = cluster.validate(&params(&[])).unwrap();
    assert_eq!(v["node_count"], "1");
    assert_eq!(v["kubernetes_version"], "1.33");
    assert!(cluster.validate(&params(&[("node_count", "101")])).is_err());

    p.check_provider(&v_provider(
        "/usr/bin/kind create cluster --name \"$KQ_CLUSTER_NAME\"",
    ))
    .unwrap();
    p.check_provider(&v_provider("kind create cluster"))
        .unwrap();
    for (bad, why) in [
        ("bin/kind create", "relative path"),
        ("kind 'create", "does not split"),
        ("'' create", "empty program"),
    ] {
        let e = p.check_provider(&v_provider(bad)).unwrap_err();
        assert!(e.message.contains(why), "{bad}: {e}");
    }
    let mut with_delete = v_provider("kind create cluster");
    with_delete.insert("delete_command".into(), "kind delete 'cluster".into());
    assert_eq!(
        p.check_provider(&with_delete).unwrap_err().field,
        "delete_command"
    );
    assert_eq!(
        p.check_provider(&params(&[])).unwrap_err().field,
        "create_command"
    );
}

fn v_provider(create: &str) -> Params {
    params(&[
        ("create_command", create),
        ("shell", "false"),
        ("timeout_seconds", "60"),
    ])
}
