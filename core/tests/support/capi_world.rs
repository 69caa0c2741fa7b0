//! The world of the Cluster API scenarios that need only the `cluster-api` provisioner: a
//! real kube-apiserver as the management cluster (the CRDs of both generations installed, a
//! ClusterClass), the test kit's Cluster API controller handing that same API server out as
//! every workload cluster, and KQueen on SQLite with its engine, the member alice of team-a
//! and the operator `ops`.

use std::sync::Arc;
use std::time::Duration;

use kqueen_core::engine::{Engine, EngineConfig};
use kqueen_core::identity::GroupMap;
use kqueen_core::provisioner::cluster_api::{ClusterApiOptions, ClusterApiProvisioner};
use kqueen_core::provisioner::Registry;
use kqueen_core::store::SqlStore;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::capi::{self, FakeCapi, Served};

use super::capi::client_of;

/// Dropped in this order: the fake controller, then the API server.
pub struct CapiWorld {
    pub fake: FakeCapi,
    pub server: RealApiServer,
    /// The management cluster's admin.
    pub mgmt: kube::Client,
    pub k: Kqueen,
    /// KQueen's store (its test hooks move operations' deadlines).
    pub store: Arc<SqlStore>,
    pub engine: Engine,
    pub alice: Actor,
    pub ops: Actor,
    _db: kqueen_testkit::TestDatabase,
    _work: tempfile::TempDir,
}

/// The registry with the `cluster-api` provisioner alone, polling every 100 ms.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register(Arc::new(ClusterApiProvisioner::new(ClusterApiOptions {
        poll: Duration::from_millis(100),
    })));
    registry
}

impl CapiWorld {
    /// The world with ClusterClass `class` and kube-controller-manager's `controllers`;
    /// `None` (printed why) without the real API server.
    pub async fn start(class: &str, controllers: &str) -> Option<Self> {
        let server = RealApiServer::start_with_controllers(controllers).await?;
        let mgmt = client_of(&server.admin_kubeconfig()).await;
        capi::install_crds(&mgmt, Served::Both).await.unwrap();
        capi::create_cluster_class(&mgmt, "default", class, Served::Both)
            .await
            .unwrap();
        let fake = FakeCapi::start(mgmt.clone(), Served::Both, Duration::from_millis(100));
        fake.set_kubeconfig(server.admin_kubeconfig());
        let db = kqueen_testkit::TestDatabase::sqlite();
        let work = tempfile::tempdir().unwrap();
        let store = Arc::new(db.connect().await);
        let k = Kqueen::new(store.clone())
            .with_registry(registry())
            .with_group_map(GroupMap::parse("team-a=team-a:member").unwrap());
        let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
        let mut config = EngineConfig::new(work.path().join("clusters"));
        config.poll_interval = Duration::from_millis(50);
        let engine = k.engine(config);
        Some(Self {
            fake,
            server,
            mgmt,
            k,
            store,
            engine,
            alice,
            ops: Actor::cli(Some("ops".into())),
            _db: db,
            _work: work,
        })
    }
}
