//! The `cluster-api` provisioner with a ClusterClass whose workers are MachinePools and whose
//! control plane is a managed service (AKS, GKE), against a real kube-apiserver as the
//! management cluster (`KQUEEN_TEST_KUBE_APISERVER`) and the test controller that plays
//! Cluster API (`kqueen_testkit::capi`), which counts the pools' replicas without Machines.
//! The management API server is also the "cluster" Cluster API hands out.
//!
//! A member requests a cluster: the Cluster has `workers.machinePools` and no
//! `controlPlane`; scale and upgrade are followed on Cluster API's own counts
//! (`status.workers`); delete waits until the Cluster is gone.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use kqueen_core::cluster::{ClusterRequest, ClusterState};
use support::capi::{cluster_json, events_of, machines_of};
use support::capi_world::CapiWorld;
use support::converge::converge;

#[tokio::test]
async fn machine_pools_and_a_managed_control_plane_scale_upgrade_and_delete() {
    let Some(w) = CapiWorld::start("managed", "*").await else {
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

    // The operator: workers are MachinePools, the control plane is the cloud's.
    let kubeconfig = w.server.admin_kubeconfig();
    kqueen_testkit::catalog::offer(
        k,
        ops,
        (
            "cluster-api",
            "aks",
            &[
                ("management_kubeconfig", kubeconfig.as_str()),
                ("cluster_class", "managed"),
                ("worker_pools", "machine-pools"),
            ],
        ),
        (
            "aks-small",
            r#"{"control_plane_replicas": {"fixed": "0"}, "node_count": {"max": 3}}"#,
        ),
    )
    .await;

    let (cluster, _) = k
        .clusters()
        .request_cluster(
            alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "pools".into(),
                template: "aks-small".into(),
                parameters: [
                    ("kubernetes_version".to_owned(), "v1.31.0".to_owned()),
                    ("node_count".to_owned(), "2".to_owned()),
                ]
                .into(),
            },
        )
        .await
        .unwrap();
    let id = cluster.id.to_string();
    converge(k, engine, &id, Some(ClusterState::Ready)).await;

    // What KQueen wrote: MachinePools, no control plane; and no Machines came of it.
    let object = cluster_json(mgmt, "v1beta2", "team-a-pools").await.unwrap();
    let topology = &object["spec"]["topology"];
    println!("topology: {topology:#}");
    assert_eq!(topology["workers"]["machinePools"][0]["replicas"], 2);
    assert!(topology.get("controlPlane").is_none(), "{topology:#}");
    assert!(topology["workers"].get("machineDeployments").is_none());
    assert_eq!(machines_of(mgmt, "team-a-pools").await.len(), 0);

    // Scale: followed on Cluster API's count of the pools.
    k.clusters().scale_cluster(alice, &id, 3).await.unwrap();
    converge(k, engine, &id, Some(ClusterState::Ready)).await;
    let object = cluster_json(mgmt, "v1beta2", "team-a-pools").await.unwrap();
    assert_eq!(
        object["spec"]["topology"]["workers"]["machinePools"][0]["replicas"],
        3
    );
    assert_eq!(object["status"]["workers"]["readyReplicas"], 3);
    let events = events_of(k, &id).await;
    assert!(
        events.iter().any(|e| e == "Workers: 3 of 3 machines ready"),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("Workers: ") && e != "Workers: 3 of 3 machines ready"),
        "the convergence was not shown: {events:#?}"
    );
    // The scale's count is the cluster's parameter; the node count is the same until the
    // background sync started at Ready reports the cluster's Nodes (none here: 0).
    let detail = k.clusters().cluster_detail(alice, &id).await.unwrap();
    assert_eq!(detail.cluster.parameters["node_count"], "3");
    assert!(
        [0, 3].contains(&detail.cluster.node_count),
        "{}",
        detail.cluster.node_count
    );

    // Upgrade: followed until every replica runs the new version.
    k.clusters()
        .upgrade_cluster(alice, &id, "v1.32.0")
        .await
        .unwrap();
    converge(k, engine, &id, Some(ClusterState::Ready)).await;
    let object = cluster_json(mgmt, "v1beta2", "team-a-pools").await.unwrap();
    assert_eq!(object["spec"]["topology"]["version"], "v1.32.0");
    assert_eq!(object["status"]["workers"]["upToDateReplicas"], 3);
    let events = events_of(k, &id).await;
    assert!(
        events
            .iter()
            .any(|e| e == "Workers at v1.32.0: 3 of 3 ready"),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("Workers at v1.32.0: ") && !e.ends_with(" 3 of 3 ready")),
        "the rollout was not shown: {events:#?}"
    );
    assert_eq!(machines_of(mgmt, "team-a-pools").await.len(), 0);

    // Delete: KQueen waits until Cluster API has removed the Cluster.
    k.clusters().delete_cluster(alice, &id).await.unwrap();
    converge(k, engine, &id, None).await;
    assert!(cluster_json(mgmt, "v1beta2", "team-a-pools")
        .await
        .is_none());
}
