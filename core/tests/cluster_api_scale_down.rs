//! The autoscaler's scale-down with the `cluster-api` provisioner: the node it names goes,
//! because its Machine is marked `cluster.x-k8s.io/delete-machine` before the
//! MachineDeployment shrinks and Cluster API deletes a marked Machine first (the test kit's
//! controller does, as MachineSets do). The management API server is also the cluster
//! Cluster API hands out, and each worker Machine's node is a Node object written there by
//! hand (no kubelet runs; the node lifecycle controller is off so they stay Ready). A
//! scale-down whose drain a disruption budget blocks ends at its deadline with the node
//! uncordoned.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kqueen_core::autoscale::AutoscaleSettings;
use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_testkit::capi;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{json, Value};
use support::capi::{cluster_json, events_of, machines_of};
use support::capi_world::CapiWorld;
use support::converge::converge;

/// Cluster `trim` of alice's tenant with three worker Machines, each with its Ready Node
/// (the fake names a Machine's node after it): its id and the nodes, sorted.
async fn three_workers(w: &CapiWorld) -> (String, Vec<String>) {
    let CapiWorld {
        k,
        engine,
        alice,
        ops,
        mgmt,
        ..
    } = w;
    let kubeconfig = w.server.admin_kubeconfig();
    kqueen_testkit::catalog::offer(
        k,
        ops,
        (
            "cluster-api",
            "capi",
            &[
                ("management_kubeconfig", kubeconfig.as_str()),
                ("cluster_class", "quick-start"),
            ],
        ),
        ("capi-small", r#"{"node_count": {"max": 3}}"#),
    )
    .await;
    let (cluster, _) = k
        .clusters()
        .request_cluster(
            alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "trim".into(),
                template: "capi-small".into(),
                parameters: [
                    ("kubernetes_version".to_owned(), "v1.30.0".to_owned()),
                    ("node_count".to_owned(), "3".to_owned()),
                ]
                .into(),
            },
        )
        .await
        .unwrap();
    let id = cluster.id.to_string();
    converge(k, engine, &id, Some(ClusterState::Ready)).await;

    // Ready once the control plane is: the three workers come after.
    let before = running_workers(mgmt, "team-a-trim", 3).await;
    let nodes: Api<Node> = Api::all(mgmt.clone());
    for name in &before {
        let node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&ready))
            .await
            .unwrap();
    }
    (id, before)
}

#[tokio::test]
async fn the_autoscalers_scale_down_removes_the_machine_of_the_node_it_named() {
    let started = Instant::now();
    let Some(w) = CapiWorld::start("quick-start", "*,-nodelifecycle").await else {
        return;
    };
    let CapiWorld {
        k,
        engine,
        ops,
        mgmt,
        ..
    } = &w;
    let (id, before) = three_workers(&w).await;
    let nodes: Api<Node> = Api::all(mgmt.clone());
    // Of idle nodes alike, the autoscaler removes the first by name; left to itself, Cluster
    // API (the fake) would delete the last Machine listed, so only the mark makes this one go.
    let node = before[0].clone();
    let kept: Vec<String> = before[1..].to_vec();

    // The maximum lowered below the three nodes: the next turn queues a scale to 2 without
    // that node, which is drained, its Machine marked and the pool scaled down.
    let settings = AutoscaleSettings {
        min_nodes: 1,
        max_nodes: 2,
        ..AutoscaleSettings::default()
    };
    k.autoscaler().set(ops, &id, settings).await.unwrap();
    assert_eq!(k.autoscaler().turn_all().await.unwrap(), 1);
    converge(k, engine, &id, Some(ClusterState::Ready)).await;

    let object = cluster_json(mgmt, "v1beta2", "team-a-trim").await.unwrap();
    assert_eq!(
        object["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"],
        2
    );
    assert_eq!(running_workers(mgmt, "team-a-trim", 2).await, kept);
    let machines = machines_of(mgmt, "team-a-trim").await;
    assert_eq!(
        machines.len(),
        3,
        "the control plane's is kept: {machines:#?}"
    );
    assert!(nodes.get_opt(&node).await.unwrap().is_none());
    for name in &kept {
        assert!(nodes.get_opt(name).await.unwrap().is_some(), "{name}");
    }
    let events = events_of(k, &id).await;
    for line in [
        format!(
            "Autoscaling: the cluster has 3 nodes, above its maximum of 2: node {node} is \
             drained and removed (3 → 2)"
        ),
        format!("node {node} is drained"),
        format!("marked the Machine default/{node} of node {node} to go first"),
        format!("removed node {node} from the cluster"),
    ] {
        assert!(events.contains(&line), "no '{line}' in {events:#?}");
    }
    println!("done in {:?}", started.elapsed());
}

/// A scale-down whose drain cannot finish (a disruption budget allows no eviction of the
/// pods on the node) ends at its deadline with the node given back: uncordoned, its Machine
/// kept, the timeline saying so.
#[tokio::test]
async fn a_drain_that_cannot_finish_gives_its_node_back() {
    let Some(w) = CapiWorld::start("quick-start", "*,-nodelifecycle").await else {
        return;
    };
    let CapiWorld {
        k,
        store,
        engine,
        ops,
        mgmt,
        ..
    } = &w;
    let (id, before) = three_workers(&w).await;
    // A pod on each node (bound by the test: no scheduler runs), none of which a budget
    // lets go.
    let sets: Api<ReplicaSet> = Api::namespaced(mgmt.clone(), "default");
    let set = json!({"metadata": {"name": "held"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "held"}},
            "template": {"metadata": {"labels": {"app": "held"}},
                "spec": {"containers": [{"name": "main", "image": "kqueen.local/busybox:1"}]}}}});
    sets.create(
        &PostParams::default(),
        &serde_json::from_value(set).unwrap(),
    )
    .await
    .unwrap();
    let budgets: Api<DynamicObject> = Api::namespaced_with(
        mgmt.clone(),
        "default",
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "policy",
            "v1beta1",
            "PodDisruptionBudget",
        )),
    );
    let budget = json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "held"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "held"}}}});
    budgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(budget).unwrap(),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(mgmt.clone(), "default");
    let started = Instant::now();
    let held = loop {
        let list = pods
            .list(&ListParams::default().labels("app=held"))
            .await
            .unwrap();
        if list.items.len() == 3 {
            break list.items;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no pods: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (pod, node) in held.iter().zip(&before) {
        let name = pod.metadata.name.as_deref().unwrap();
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"kind": "Node", "name": node}});
        // The answer is a Status, not the Binding.
        let _: Value = pods
            .create_subresource("binding", name, &PostParams::default(), &binding)
            .await
            .unwrap();
    }

    // The maximum lowered: a node is to go; its drain gets nowhere until the deadline.
    let settings = AutoscaleSettings {
        min_nodes: 1,
        max_nodes: 2,
        ..AutoscaleSettings::default()
    };
    k.autoscaler().set(ops, &id, settings).await.unwrap();
    assert_eq!(k.autoscaler().turn_all().await.unwrap(), 1);
    let uuid = id.parse().unwrap();
    store
        .testing_set_deadline(
            uuid,
            kqueen_core::clock::now() + chrono::Duration::seconds(8),
        )
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();

    let detail = k.clusters().cluster_detail(ops, &id).await.unwrap();
    assert_eq!(
        detail.cluster.state,
        ClusterState::Error,
        "{:#?}",
        detail.events
    );
    let error = detail.cluster.error.unwrap_or_default();
    let events = events_of(k, &id).await;
    let node = before
        .iter()
        .find(|n| error.contains(&format!("Draining node {n}")))
        .unwrap_or_else(|| panic!("{error}: {events:#?}"));
    assert!(error.starts_with("timed out after"), "{error}");
    let refused = format!("waiting for 1 pod to leave node {node}: default/held-");
    assert!(
        events.iter().any(|e| e.starts_with(&refused)),
        "{events:#?}"
    );
    let back = format!("node {node} takes pods again: the scale-down did not finish");
    assert!(events.contains(&back), "{events:#?}");
    let nodes: Api<Node> = Api::all(mgmt.clone());
    let spec = nodes.get(node).await.unwrap().spec.unwrap_or_default();
    assert_ne!(spec.unschedulable, Some(true), "{node} is uncordoned");
    assert_eq!(running_workers(mgmt, "team-a-trim", 3).await, before);
}

/// Waits until the cluster has `count` worker Machines, all running; their names, sorted.
async fn running_workers(client: &kube::Client, cluster: &str, count: usize) -> Vec<String> {
    let started = Instant::now();
    loop {
        let machines = machines_of(client, cluster).await;
        let workers: Vec<&Value> = machines
            .iter()
            .filter(|m| {
                m["metadata"]["labels"]
                    .get(capi::CONTROL_PLANE_LABEL)
                    .is_none()
            })
            .collect();
        if workers.len() == count && workers.iter().all(|m| m["status"]["phase"] == "Running") {
            let mut names: Vec<String> = workers
                .iter()
                .map(|m| m["metadata"]["name"].as_str().unwrap().to_owned())
                .collect();
            names.sort();
            return names;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not {count} running workers: {machines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
