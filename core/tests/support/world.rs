//! A cluster for workload tests: a real kube-apiserver (without the Deployment and
//! ReplicaSet controllers: tests play them) imported by a tenant member as cluster `prod`
//! of a template that gives tenant admins cluster-admin, with an engine to run operations.
//! People: alice (team-a member), lead (team-a admin), carol (team-b member), ops (cli).

use std::sync::Arc;
use std::time::Duration;

use kqueen_core::cluster::{ClusterRequest, ClusterState, TemplateInput};
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::{Actor, ClusterSettings, Kqueen};
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::TestDatabase;

pub struct World {
    pub db: TestDatabase,
    pub server: RealApiServer,
    pub admin: kube::Client,
    pub k: Kqueen,
    pub engine: kqueen_core::engine::Engine,
    pub alice: Actor,
    pub lead: Actor,
    pub carol: Actor,
    pub ops: Actor,
    pub cluster: String,
    pub work: tempfile::TempDir,
}

pub async fn world(db: TestDatabase) -> Option<World> {
    world_with(db, ClusterSettings::default()).await
}

/// [`world`] with `settings` (where backup archives are kept, say).
pub async fn world_with(db: TestDatabase, settings: ClusterSettings) -> Option<World> {
    let server = RealApiServer::start_with_controllers("*,-deployment,-replicaset").await?;
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&server.admin_kubeconfig(), None, false).unwrap();
    let admin = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_cluster_settings(settings)
        .with_group_map(
            GroupMap::parse("team-a=team-a:member,team-a-leads=team-a:admin,team-b=team-b:member")
                .unwrap(),
        );
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let lead = kqueen_testkit::people::login(&k, "lead", "team-a-leads").await;
    let carol = kqueen_testkit::people::login(&k, "carol", "team-b").await;
    let ops = Actor::cli(Some("ops".into()));
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("import", "existing", &[("probe_timeout_seconds", "5")]),
        ("import", ""),
    )
    .await;
    // Tenant admins get cluster-admin in clusters of this template (the policy says so).
    k.catalog()
        .create_template(
            &ops,
            TemplateInput {
                name: "owned".into(),
                provider: "existing".into(),
                admin_access: "cluster-admin".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (cluster, _) = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "prod".into(),
                template: "owned".into(),
                parameters: [("kubeconfig".to_owned(), server.admin_kubeconfig())].into(),
            },
        )
        .await
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(work.path().to_owned());
    config.poll_interval = Duration::from_millis(20);
    let engine = k.engine(config);
    engine.run_until_idle().await.unwrap();
    let id = cluster.id.to_string();
    let detail = k.clusters().cluster_detail(&alice, &id).await.unwrap();
    assert_eq!(detail.cluster.state, ClusterState::Ready);
    Some(World {
        db,
        server,
        admin,
        k,
        engine,
        alice,
        lead,
        carol,
        ops,
        cluster: id,
        work,
    })
}
