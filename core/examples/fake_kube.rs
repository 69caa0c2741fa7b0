//! The fake Kubernetes API server as a process, for the browser tests:
//! `fake_kube <kubeconfig-file>` writes the admin kubeconfig there, prints
//! `fake kube listening on <url>` and serves until killed.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use kqueen_core::testing::fake_kube::FakeKube;

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: fake_kube <kubeconfig-file>");
    let fake = FakeKube::start().await;
    std::fs::write(&path, fake.admin_kubeconfig()).unwrap();
    println!("fake kube listening on {}", fake.url());
    std::future::pending::<()>().await;
}
