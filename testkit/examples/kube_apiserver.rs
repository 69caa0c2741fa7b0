//! A real kube-apiserver as a process, for the browser tests: `kube_apiserver <kubeconfig>`
//! starts etcd, the kube-apiserver named by `KQUEEN_TEST_KUBE_APISERVER` and, when
//! `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER` names it, kube-controller-manager without the
//! Deployment and ReplicaSet controllers (tests play them by patching statuses) — see
//! [`RealApiServer`] — writes an admin kubeconfig to `<kubeconfig>` (mode 0600), prints
//! `kube-apiserver listening on <url>` and serves until SIGTERM, SIGINT or the end of its
//! standard input. Without the variable it prints `skipped: …` and exits 0.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use kqueen_testkit::apiserver::RealApiServer;
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: kube_apiserver <kubeconfig-file>");
    let Some(server) = RealApiServer::start_with_controllers("*,-deployment,-replicaset").await
    else {
        return;
    };
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(server.admin_kubeconfig().as_bytes()))
        .unwrap();
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed.send(());
    });
    let mut term = signal(SignalKind::terminate()).unwrap();
    let mut int = signal(SignalKind::interrupt()).unwrap();
    println!("kube-apiserver listening on {}", server.url());
    tokio::select! {
        _ = stdin_closed => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    drop(server);
}
