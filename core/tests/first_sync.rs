//! A cluster that has just become Ready is synced at once, in the background: its page
//! shows its nodes without anyone pressing "Sync now" or waiting for the periodic sync. The
//! number of nodes is then the synced one everywhere: on the cluster and in the tenant's
//! quota (an imported cluster requested no nodes, yet runs some).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::TestDatabase;
use serde_json::json;
use support::fake_kube::FakeKube;

async fn first_sync_follows_ready(db: TestDatabase) {
    let fake = FakeKube::start().await;
    fake.insert(
        "api/v1/nodes",
        json!({"metadata": {"name": "node-a"},
               "status": {"capacity": {"cpu": "4", "memory": "8Gi"},
                          "allocatable": {"cpu": "4", "memory": "8Gi"},
                          "nodeInfo": {"kubeletVersion": "v1.33.2"}}}),
    );
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_group_map(GroupMap::parse("team-a=team-a:member").unwrap());
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let ops = Actor::cli(Some("ops".into()));
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("import", "existing", &[("probe_timeout_seconds", "5")]),
        ("import", ""),
    )
    .await;
    let (cluster, _) = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "prod".into(),
                template: "import".into(),
                parameters: [("kubeconfig".to_owned(), fake.admin_kubeconfig())].into(),
            },
        )
        .await
        .unwrap();
    let id = cluster.id.to_string();
    let work = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(work.path().to_owned());
    config.poll_interval = Duration::from_millis(20);
    k.engine(config).run_until_idle().await.unwrap();
    let detail = k.clusters().cluster_detail(&alice, &id).await.unwrap();
    assert_eq!(detail.cluster.state, ClusterState::Ready);
    let nodes_in_quota = || async { k.tenancy().quota(&alice, "team-a").await.unwrap().1.nodes };

    // Nobody syncs: the engine asked for it when the cluster became Ready.
    let started = Instant::now();
    loop {
        let inventory = k.fleet().cluster_inventory(&alice, &id).await.unwrap();
        if let Some(status) = &inventory.status {
            assert_eq!(status.error, None, "the first sync failed");
            let names: Vec<&str> = inventory.nodes.iter().map(|n| n.name.as_str()).collect();
            assert_eq!(names, ["node-a"]);
            let detail = k.clusters().cluster_detail(&alice, &id).await.unwrap();
            assert_eq!(detail.cluster.node_count, 1, "the synced count");
            assert_eq!(nodes_in_quota().await, 1, "the quota counts the same nodes");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not synced after Ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_is_synced_when_it_becomes_ready_on_sqlite() {
    first_sync_follows_ready(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_is_synced_when_it_becomes_ready_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    first_sync_follows_ready(db).await;
}
