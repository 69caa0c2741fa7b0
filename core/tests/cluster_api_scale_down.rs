//! The autoscaler's scale-down with the `cluster-api` provisioner: the node it names goes,
//! because its Machine is marked `cluster.x-k8s.io/delete-machine` before the
//! MachineDeployment shrinks and Cluster API deletes a marked Machine first (the test kit's
//! controller does, as MachineSets do). The management API server is also the cluster
//! Cluster API hands out, and each worker Machine's node is a Node object written there by
//! hand (no kubelet runs; the node lifecycle controller is off so they stay Ready).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::{Duration, Instant};

use kqueen_core::autoscale::AutoscaleSettings;
use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_testkit::capi;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use support::capi::{cluster_json, events_of, machines_of};
use support::capi_world::CapiWorld;
use support::converge::converge;

#[tokio::test]
async fn the_autoscalers_scale_down_removes_the_machine_of_the_node_it_named() {
    let started = Instant::now();
    let Some(w) = CapiWorld::start("quick-start", "*,-nodelifecycle").await else {
        return;
    };
    let CapiWorld {
        k,
        engine,
        alice,
        ops,
        mgmt,
        ..
    } = &w;
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

    // Ready once the control plane is: the three workers come after. Each gets its Ready
    // node (the fake names a Machine's node after it).
    let before = running_workers(mgmt, "team-a-trim", 3).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(mgmt.clone());
    for name in &before {
        let node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&ready))
            .await
            .unwrap();
    }
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
