//! The fake Kubernetes API server as a process, for the browser tests:
//! `fake_kube <kubeconfig-file> [--demo]` writes the admin kubeconfig there, prints
//! `fake kube listening on <url>` and serves until killed. With `--demo` it holds a small
//! synthetic cluster (nodes with metrics, namespaces, Deployments, pods, a privileged agent).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use kqueen_testkit::fake_cluster::{seed, Shape};
use kqueen_testkit::fake_kube::FakeKube;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: fake_kube <kubeconfig-file> [--demo]");
    let demo = args.any(|a| a == "--demo");
    let fake = FakeKube::start().await;
    if demo {
        seed(&fake, &Shape::demo());
    }
    std::fs::write(&path, fake.admin_kubeconfig()).unwrap();
    println!("fake kube listening on {}", fake.url());
    std::future::pending::<()>().await;
}
