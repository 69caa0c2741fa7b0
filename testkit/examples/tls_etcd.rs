//! The shared etcd of hosted control planes as a process, for the browser tests:
//! `tls_etcd <settings-file>` starts a [`TlsEtcd`] (TLS, client certificates required, auth
//! on), writes there, as one JSON object keyed by the hosted provider's setting names, what a
//! provider needs (`etcd_endpoints`, `etcd_ca`, `etcd_client_ca`, `etcd_client_ca_key`,
//! `etcd_admin_cert`, `etcd_admin_key`; mode 0600: it holds keys), prints
//! `tls etcd listening on <endpoint>` and serves until SIGTERM, SIGINT or the end of its
//! standard input (start it with a pipe there, not /dev/null: a parent that dies without
//! a word closes the pipe and etcd goes with it). Then it stops etcd and removes its data.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use kqueen_testkit::tls_etcd::TlsEtcd;
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: tls_etcd <settings-file>");
    let etcd = TlsEtcd::start().await;
    let settings: serde_json::Map<String, serde_json::Value> = etcd
        .provider_settings()
        .into_iter()
        .map(|(field, value)| (field.to_owned(), value.into()))
        .collect();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(serde_json::Value::Object(settings).to_string().as_bytes()))
        .unwrap();

    // A plain thread: a blocking read in tokio's pool would hold the runtime open at exit.
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed.send(());
    });
    let mut term = signal(SignalKind::terminate()).unwrap();
    let mut int = signal(SignalKind::interrupt()).unwrap();
    println!("tls etcd listening on {}", etcd.endpoint);
    tokio::select! {
        _ = stdin_closed => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    // Kills etcd, waits for it, then removes its directory.
    drop(etcd);
}
