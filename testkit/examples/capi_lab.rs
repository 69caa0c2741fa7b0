//! A Cluster API management cluster as a process, for the browser tests:
//! `capi_lab <kubeconfig>` starts a real kube-apiserver (see [`RealApiServer`], every
//! controller of kube-controller-manager when it is named), installs the test kit's Cluster
//! API CRDs serving v1beta1 and v1beta2, creates the ClusterClass `quick-start` in namespace
//! `default` and runs [`FakeCapi`] with a one-second tick, handing out the admin kubeconfig
//! of this very API server as every Cluster's kubeconfig. It writes that kubeconfig to
//! `<kubeconfig>` (mode 0600), prints `capi lab listening on <url>` and serves until
//! SIGTERM, SIGINT or the end of its standard input. Without `KQUEEN_TEST_KUBE_APISERVER`
//! it prints `skipped: …` and exits 0.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::Duration;

use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::capi::{self, FakeCapi, Served};

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: capi_lab <kubeconfig-file>");
    let Some(server) = RealApiServer::start().await else {
        return;
    };
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&server.admin_kubeconfig(), None, false).unwrap();
    let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    capi::install_crds(&client, Served::Both).await.unwrap();
    capi::create_cluster_class(&client, "default", "quick-start", Served::Both)
        .await
        .unwrap();
    let fake = FakeCapi::start(client, Served::Both, Duration::from_secs(1));
    fake.set_kubeconfig(server.admin_kubeconfig());
    let stopped = kqueen_testkit::process::on_stop();
    kqueen_testkit::process::write_private(&path, &server.admin_kubeconfig()).unwrap();
    println!("capi lab listening on {}", server.url());
    stopped.await;
    // The controller before the API server it talks to.
    drop(fake);
    drop(server);
}
