//! A real kube-apiserver as a process, for the browser tests: `kube_apiserver <kubeconfig>`
//! starts etcd, the kube-apiserver named by `KQUEEN_TEST_KUBE_APISERVER` and, when
//! `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER` names it, kube-controller-manager without the
//! Deployment and ReplicaSet controllers (tests play them by patching statuses) — see
//! [`RealApiServer`] — writes an admin kubeconfig to `<kubeconfig>` (mode 0600), prints
//! `kube-apiserver listening on <url>` and serves until SIGTERM, SIGINT or the end of its
//! standard input. Without the variable it prints `skipped: …` and exits 0.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use kqueen_testkit::apiserver::RealApiServer;

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: kube_apiserver <kubeconfig-file>");
    let Some(server) = RealApiServer::start_with_controllers("*,-deployment,-replicaset").await
    else {
        return;
    };
    let stopped = kqueen_testkit::process::on_stop();
    kqueen_testkit::process::write_private(&path, &server.admin_kubeconfig()).unwrap();
    println!("kube-apiserver listening on {}", server.url());
    stopped.await;
    drop(server);
}
