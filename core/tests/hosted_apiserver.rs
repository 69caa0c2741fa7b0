//! Two hosted control planes of two tenants on one shared etcd, with the real kube-apiserver
//! (and kube-controller-manager) named by `KQUEEN_TEST_KUBE_APISERVER` (and
//! `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER`), started with the files and command lines KQueen
//! writes ([`ControlPlaneFiles`]) and the PKI it generates: both become ready through their
//! admin kubeconfigs, each sees only its own namespaces, etcd holds nothing outside their key
//! spaces, a read-only key space makes its API server refuse writes (and not the other's),
//! the controller manager finalises a deleted namespace, and removing a key space clears it;
//! a key space copied with its own etcd user (which cannot read another's) and loaded into
//! another is served by that one's API server.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kqueen_core::hosted::control_plane::{ControlPlaneFiles, ControlPlaneSpec};
use kqueen_core::hosted::dump::KeySpaceDump;
use kqueen_core::hosted::etcd::{EtcdAccess, KeySpace, SharedEtcd};
use kqueen_core::hosted::pki::{self, PkiRequest};
use kqueen_core::hosted::supervisor::{Backoff, ProcessSpec, Supervisor, SupervisorEvent};
use kqueen_testkit::process::free_port;
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, DeleteParams, PostParams};

const APISERVER: &str = "KQUEEN_TEST_KUBE_APISERVER";
const CONTROLLER_MANAGER: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";

/// One control plane's processes; killed on drop.
struct Running {
    children: Vec<Child>,
    client: kube::Client,
    dir: tempfile::TempDir,
    /// How the controller manager was started (binary, arguments), to start it again.
    controller_manager: Option<(String, Vec<String>)>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Running {
    fn log(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Starts the controller manager again when it exited, as KQueen's supervisor does: it
    /// exits for good on some errors of the API server, such as a write refused while the
    /// key space was read only (its token controller's client builder is fatal).
    fn restart_exited_controller_manager(&mut self) {
        let Some((binary, args)) = self.controller_manager.clone() else {
            return;
        };
        if let Some(Ok(Some(status))) = self.children.get_mut(1).map(Child::try_wait) {
            println!(
                "kube-controller-manager exited ({status}); started again:\n{}",
                self.controller_manager_report()
            );
            let log = self.dir.path().join("controller-manager.log");
            self.children[1] = spawn(&binary, args, log);
        }
    }

    /// Why the controller manager did not act: whether it still runs, its error and fatal
    /// lines (a fatal exit ends the log with every goroutine's stack, which hides them), and
    /// the log's last lines.
    fn controller_manager_report(&mut self) -> String {
        let state = match self.children.get_mut(1).map(Child::try_wait) {
            Some(Ok(None)) => "running".to_string(),
            Some(Ok(Some(status))) => format!("exited: {status}"),
            Some(Err(e)) => format!("unknown: {e}"),
            None => "not started".into(),
        };
        let text = std::fs::read_to_string(self.dir.path().join("controller-manager.log"))
            .unwrap_or_default();
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with('E') || l.starts_with('F'))
            .take(40)
            .collect();
        format!(
            "kube-controller-manager {state}\nerror and fatal lines:\n{}\nlast lines:\n{}",
            errors.join("\n"),
            self.log("controller-manager.log")
        )
    }
}

fn spawn(binary: &str, args: Vec<String>, log: std::path::PathBuf) -> Child {
    let out = std::fs::File::create(log).unwrap();
    Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("start {binary}: {e}"))
}

/// A control plane's files and admin client, ready to start.
struct Prepared {
    dir: tempfile::TempDir,
    files: ControlPlaneFiles,
    spec: ControlPlaneSpec,
    client: kube::Client,
}

async fn prepare(etcd: &TlsEtcd, space: &KeySpace, name: &str) -> Prepared {
    let dir = tempfile::tempdir().unwrap();
    let spec = ControlPlaneSpec::on_host(
        vec![etcd.endpoint.clone()],
        space.clone(),
        "127.0.0.1".parse().unwrap(),
        free_port(),
        (1, 20),
    );
    let pki = pki::generate(&PkiRequest::new(name, vec!["127.0.0.1".into()])).unwrap();
    let etcd_cert = etcd.client_cert(&space.user());
    let files = ControlPlaneFiles::write(
        &dir.path().join("pki"),
        &pki,
        &etcd.server_ca.cert_key().cert_pem,
        &etcd_cert,
        &spec,
    )
    .unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("pki/ca.key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "keys are readable by their owner only");
    let kubeconfig = pki::kubeconfig(name, &spec.local_endpoint, &pki.ca.cert_pem, &pki.admin);
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(
        std::str::from_utf8(kubeconfig.expose()).unwrap(),
        None,
        false,
    )
    .unwrap();
    let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(5))
        .await
        .unwrap();
    Prepared {
        dir,
        files,
        spec,
        client,
    }
}

/// Waits for `/readyz`; `log` explains a timeout.
async fn wait_ready(client: &kube::Client, name: &str, log: &dyn Fn() -> String) {
    let started = Instant::now();
    loop {
        let request = http::Request::get("/readyz").body(Vec::new()).unwrap();
        if let Ok(text) = client.request_text(request).await {
            if text.trim() == "ok" {
                println!("{name}: ready in {:?}", started.elapsed());
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name} not ready:\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn start(etcd: &TlsEtcd, space: &KeySpace, name: &str) -> Running {
    let binary = std::env::var(APISERVER).unwrap();
    let Prepared {
        dir,
        files,
        spec,
        client,
    } = prepare(etcd, space, name).await;
    let children = vec![spawn(
        &binary,
        files.apiserver_args(&spec),
        dir.path().join("apiserver.log"),
    )];
    let mut running = Running {
        children,
        client,
        dir,
        controller_manager: None,
    };
    wait_ready(&running.client, name, &|| running.log("apiserver.log")).await;
    // Started once the API server answers: unsupervised (KQueen's supervisor would restart
    // it), a controller manager exits for good when the API server is not healthy within its
    // 10 s wait, as two API servers starting at once on a busy machine can be.
    if let Ok(cm) = std::env::var(CONTROLLER_MANAGER) {
        let log = running.dir.path().join("controller-manager.log");
        let args = files.controller_manager_args(&spec);
        running.children.push(spawn(&cm, args.clone(), log));
        running.controller_manager = Some((cm, args));
    }
    running
}

async fn create_namespace(c: &kube::Client, name: &str) -> Result<Namespace, kube::Error> {
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}
    }))
    .unwrap();
    Api::<Namespace>::all(c.clone())
        .create(&PostParams::default(), &ns)
        .await
}

async fn namespaces(c: &kube::Client) -> Vec<String> {
    Api::<Namespace>::all(c.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect()
}

#[tokio::test]
async fn two_tenants_control_planes_share_one_etcd_and_cannot_see_each_other() {
    if std::env::var(APISERVER).is_err() {
        println!("skipped: {APISERVER} not set (the real kube-apiserver binary)");
        return;
    }
    let etcd = TlsEtcd::start().await;
    let admin = SharedEtcd::connect(&etcd.root_access(), Duration::from_secs(5))
        .await
        .unwrap();
    let (a, b) = (
        KeySpace::for_cluster(uuid::Uuid::now_v7()),
        KeySpace::for_cluster(uuid::Uuid::now_v7()),
    );
    admin.open(&a).await.unwrap();
    admin.open(&b).await.unwrap();
    let (mut one, two) = tokio::join!(
        start(&etcd, &a, "team-a-dev"),
        start(&etcd, &b, "team-b-dev")
    );

    create_namespace(&one.client, "only-in-a").await.unwrap();
    create_namespace(&two.client, "only-in-b").await.unwrap();
    let (in_a, in_b) = (namespaces(&one.client).await, namespaces(&two.client).await);
    assert!(in_a.contains(&"only-in-a".into()) && !in_a.contains(&"only-in-b".into()));
    assert!(in_b.contains(&"only-in-b".into()) && !in_b.contains(&"only-in-a".into()));

    // Everything the API servers stored is inside their key spaces.
    let mut root = etcd.raw(&etcd.client_cert("root")).await.unwrap();
    let all = root
        .get(
            "/",
            Some(GetOptions::new().with_from_key().with_keys_only()),
        )
        .await
        .unwrap();
    assert!(all.count() > 50, "both API servers stored their objects");
    for kv in all.kvs() {
        let key = kv.key_str().unwrap();
        assert!(
            key.starts_with(&a.prefix()) || key.starts_with(&b.prefix()),
            "{key} is outside the key spaces"
        );
    }
    let usage = admin.usage(&a).await.unwrap();
    assert!(
        usage.keys > 20 && usage.bytes > usage.keys * 50,
        "{usage:?}"
    );

    // Read only: tenant A's API server refuses writes, B's does not; then A writes again.
    admin.set_writable(&a, false).await.unwrap();
    let refused = create_namespace(&one.client, "while-read-only").await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(
        namespaces(&one.client).await.contains(&"only-in-a".into()),
        "reads work"
    );
    create_namespace(&two.client, "b-still-writes")
        .await
        .unwrap();
    admin.set_writable(&a, true).await.unwrap();
    create_namespace(&one.client, "after-read-only")
        .await
        .unwrap();

    // The controller manager finalises a deleted namespace.
    if one.children.len() > 1 {
        Api::<Namespace>::all(one.client.clone())
            .delete("after-read-only", &DeleteParams::default())
            .await
            .unwrap();
        let started = Instant::now();
        while namespaces(&one.client)
            .await
            .contains(&"after-read-only".into())
        {
            one.restart_exited_controller_manager();
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "namespace not finalised:\n{}",
                one.controller_manager_report()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    } else {
        println!("note: {CONTROLLER_MANAGER} not set: namespace finalisation not checked");
    }

    // Removal: A's processes stop, its key space is emptied; B goes on.
    drop(one);
    let removed = admin.remove(&a).await.unwrap();
    assert!(removed > 20, "{removed}");
    assert_eq!(admin.usage(&a).await.unwrap().keys, 0);
    assert!(namespaces(&two.client).await.contains(&"only-in-b".into()));
}

/// Waits for the next event about `name`, skipping others.
async fn event_of(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<SupervisorEvent>,
    name: &str,
) -> SupervisorEvent {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("an event within 30 s")
            .expect("the supervisor is alive");
        let of = match &e {
            SupervisorEvent::Started { name, .. }
            | SupervisorEvent::Adopted { name, .. }
            | SupervisorEvent::Exited { name, .. }
            | SupervisorEvent::Restarting { name, .. }
            | SupervisorEvent::Stopped { name, .. } => name.clone(),
        };
        if of == name {
            return e;
        }
    }
}

#[tokio::test]
async fn a_supervised_control_plane_survives_a_killed_api_server_a_restart_of_kqueen_and_an_upgrade(
) {
    let Ok(binary) = std::env::var(APISERVER) else {
        println!("skipped: {APISERVER} not set (the real kube-apiserver binary)");
        return;
    };
    let etcd = TlsEtcd::start().await;
    let admin = SharedEtcd::connect(&etcd.root_access(), Duration::from_secs(5))
        .await
        .unwrap();
    let space = KeySpace::for_cluster(uuid::Uuid::now_v7());
    admin.open(&space).await.unwrap();
    let p = prepare(&etcd, &space, "team-a-dev").await;
    let run_dir = p.dir.path().join("run");
    // Supervised processes outlive their supervisor: kill them if this test fails midway.
    let _guard = kqueen_testkit::process::KillOnDrop(run_dir.clone());
    let specs = |apiserver: &str| {
        let mut specs = vec![ProcessSpec {
            name: "kube-apiserver".into(),
            binary: apiserver.into(),
            args: p.files.apiserver_args(&p.spec),
            dir: run_dir.clone(),
            marker: p.dir.path().display().to_string(),
        }];
        if let Ok(cm) = std::env::var(CONTROLLER_MANAGER) {
            specs.push(ProcessSpec {
                name: "kube-controller-manager".into(),
                binary: cm.into(),
                args: p.files.controller_manager_args(&p.spec),
                dir: run_dir.clone(),
                marker: p.dir.path().display().to_string(),
            });
        }
        specs
    };
    let log = || {
        std::fs::read_to_string(run_dir.join("kube-apiserver.log"))
            .unwrap_or_default()
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let backoff = Backoff {
        first: Duration::from_millis(200),
        ..Backoff::default()
    };
    let key = "team-a-dev";
    let (first, mut rx) = Supervisor::new(backoff);
    first.run(key, specs(&binary)).await.unwrap();
    wait_ready(&p.client, key, &log).await;
    create_namespace(&p.client, "kept").await.unwrap();

    // A killed API server is started again and has its data.
    let pid = first.pids(key)["kube-apiserver"];
    let victim = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(victim, rustix::process::Signal::KILL).unwrap();
    loop {
        if let SupervisorEvent::Exited { status, .. } = event_of(&mut rx, "kube-apiserver").await {
            assert_eq!(status, "was killed by signal 9");
            break;
        }
    }
    wait_ready(&p.client, key, &log).await;
    assert_ne!(first.pids(key)["kube-apiserver"], pid);
    assert!(namespaces(&p.client).await.contains(&"kept".into()));

    // KQueen restarts: the next supervisor adopts the running processes.
    let running = first.pids(key);
    first.release(key).await;
    drop(first);
    let (second, mut rx) = Supervisor::new(backoff);
    second.run(key, specs(&binary)).await.unwrap();
    match event_of(&mut rx, "kube-apiserver").await {
        SupervisorEvent::Adopted { pid, .. } => assert_eq!(pid, running["kube-apiserver"]),
        other => panic!("not adopted: {other:?}"),
    }
    wait_ready(&p.client, key, &log).await;
    assert!(namespaces(&p.client).await.contains(&"kept".into()));

    // An upgrade: other binaries (a copy here: one version is available), same data.
    let v2 = p.dir.path().join("v2");
    std::fs::create_dir_all(&v2).unwrap();
    let copy = v2.join("kube-apiserver");
    std::fs::copy(&binary, &copy).unwrap();
    second
        .run(key, specs(copy.to_str().unwrap()))
        .await
        .unwrap();
    match event_of(&mut rx, "kube-apiserver").await {
        SupervisorEvent::Started { pid, .. } => assert_ne!(pid, running["kube-apiserver"]),
        other => panic!("not restarted: {other:?}"),
    }
    wait_ready(&p.client, key, &log).await;
    assert!(namespaces(&p.client).await.contains(&"kept".into()));

    // Delete: the processes stop and the key space is emptied.
    let pids = second.pids(key);
    second.stop(key).await;
    for pid in pids.values() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z"),
            "{pid} still runs"
        );
    }
    assert!(admin.remove(&space).await.unwrap() > 20);
}

#[tokio::test]
async fn a_tenants_key_space_is_copied_with_its_own_user_and_served_by_a_new_control_plane() {
    if std::env::var(APISERVER).is_err() {
        println!("skipped: {APISERVER} not set (the real kube-apiserver binary)");
        return;
    }
    let etcd = TlsEtcd::start().await;
    let admin = SharedEtcd::connect(&etcd.root_access(), Duration::from_secs(5))
        .await
        .unwrap();
    let (a, b, other) = (
        KeySpace::for_cluster(uuid::Uuid::now_v7()),
        KeySpace::for_cluster(uuid::Uuid::now_v7()),
        KeySpace::for_cluster(uuid::Uuid::now_v7()),
    );
    for space in [&a, &b, &other] {
        admin.open(space).await.unwrap();
    }
    // A third tenant's key, which the copy of A must never read.
    let mut root = etcd.raw(&etcd.client_cert("root")).await.unwrap();
    let foreign = format!("{}secrets/x/y", other.prefix());
    root.put(foreign.as_str(), "not-yours", None).await.unwrap();

    let one = start(&etcd, &a, "team-a-prod").await;
    create_namespace(&one.client, "shop").await.unwrap();
    let settings: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "settings", "namespace": "shop"},
        "data": {"colour": "teal"}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(one.client.clone(), "shop")
        .create(&PostParams::default(), &settings)
        .await
        .unwrap();

    // Read as A's own etcd user: etcd refuses it any other range.
    let as_a = EtcdAccess {
        client: etcd.client_cert(&a.user()),
        ..etcd.root_access()
    };
    let tenant = SharedEtcd::connect(&as_a, Duration::from_secs(5))
        .await
        .unwrap();
    let refused = tenant.dump(&other).await;
    assert!(refused.is_err(), "A's user read another key space");
    let dump = tenant.dump(&a).await.unwrap();
    assert!(dump.revision > 0);
    assert!(dump.entries.len() > 20, "{}", dump.entries.len());
    assert!(dump
        .entries
        .iter()
        .all(|e| !e.key.starts_with(b"/") && !e.value.windows(9).any(|w| w == b"not-yours")));
    let keys: Vec<String> = dump
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.key).into_owned())
        .collect();
    assert!(
        keys.contains(&"configmaps/shop/settings".to_owned()),
        "{keys:?}"
    );
    assert!(dump.namespaces().contains(&"shop".to_owned()));
    let dump = KeySpaceDump::decode(&dump.encode()).unwrap();

    // Loaded into B, under a running API server of its own: B serves A's objects, B's
    // user may write again, and the third tenant's key is as it was.
    let two = start(&etcd, &b, "team-a-spare").await;
    let loaded = admin.load(&b, &dump).await.unwrap();
    assert!(loaded.written > 0, "{loaded:?}");
    assert_eq!(admin.writable(&b).await.unwrap(), Some(true));
    let configmaps = Api::<ConfigMap>::namespaced(two.client.clone(), "shop");
    let started = Instant::now();
    let restored = loop {
        match configmaps.get_opt("settings").await {
            Ok(Some(c)) => break c,
            other => {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "{other:?}\n{}",
                    two.log("apiserver.log")
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    assert_eq!(
        restored
            .data
            .unwrap_or_default()
            .get("colour")
            .map(String::as_str),
        Some("teal")
    );
    create_namespace(&two.client, "after-restore")
        .await
        .unwrap();
    let foreign_now = root.get(foreign.as_str(), None).await.unwrap();
    assert_eq!(foreign_now.kvs()[0].value(), b"not-yours");
    assert_eq!(
        foreign_now.kvs()[0].version(),
        1,
        "the third key space was not written"
    );

    // A read-only key space stays read-only after a load.
    admin.set_writable(&b, false).await.unwrap();
    admin.load(&b, &dump).await.unwrap();
    assert_eq!(admin.writable(&b).await.unwrap(), Some(false));
    // A key space that is not open is refused.
    let closed = KeySpace::for_cluster(uuid::Uuid::now_v7());
    assert!(admin.load(&closed, &dump).await.is_err());
    drop(one);
    drop(two);
}
