//! What the Cluster API scenarios share: a client from a kubeconfig, the management
//! cluster's Cluster objects, and a cluster's timeline as text.

use std::time::Duration;

use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::capi;
use kube::api::{Api, DynamicObject};
use serde_json::Value;

/// A client of the API server a kubeconfig names.
pub async fn client_of(yaml: &str) -> kube::Client {
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(yaml, None, false).unwrap();
    kqueen_core::kubernetes::client(&parsed, Duration::from_secs(5))
        .await
        .unwrap()
}

/// The Clusters of namespace `default`, at API version `version`.
pub fn clusters_api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        "default",
        &capi::resource(version, "Cluster"),
    )
}

/// A Cluster of namespace `default` as JSON; None when there is none.
pub async fn cluster_json(client: &kube::Client, version: &str, name: &str) -> Option<Value> {
    match clusters_api(client, version).get(name).await {
        Ok(o) => Some(serde_json::to_value(o).unwrap()),
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(e) => panic!("{e}"),
    }
}

/// The messages of a cluster's timeline, oldest first.
pub async fn events_of(k: &Kqueen, id: &str) -> Vec<String> {
    let ops = Actor::cli(Some("ops".into()));
    k.clusters()
        .cluster_events(&ops, id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.message)
        .collect()
}
