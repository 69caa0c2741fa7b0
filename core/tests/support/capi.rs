//! What the Cluster API scenarios share: a client from a kubeconfig, the management
//! cluster's Cluster and Machine objects, and a cluster's timeline as text.

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

/// The Machines of Cluster `cluster` (namespace `default`, v1beta2) not being deleted.
pub async fn machines_of(client: &kube::Client, cluster: &str) -> Vec<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &capi::resource("v1beta2", "Machine"),
    );
    api.list(
        &kube::api::ListParams::default()
            .labels(&format!("cluster.x-k8s.io/cluster-name={cluster}")),
    )
    .await
    .unwrap()
    .items
    .into_iter()
    .map(|m| serde_json::to_value(m).unwrap())
    .filter(|m| m.pointer("/metadata/deletionTimestamp").is_none())
    .collect()
}
