//! The use cases the operation engine calls back ([`crate::engine::EngineHooks`]).

use std::time::Duration;

use async_trait::async_trait;

use super::Kqueen;
use crate::cluster::Cluster;
use crate::engine::EngineHooks;

#[async_trait]
impl EngineHooks for Kqueen {
    fn sweep_access_soon(&self) {
        self.access_sweep().sweep_access_soon()
    }

    fn cluster_ready(&self, cluster_id: uuid::Uuid) {
        self.fleet().sync_soon(cluster_id)
    }

    async fn revoke_all_access(&self, cluster: &Cluster, within: Duration) -> Option<String> {
        self.access().revoke_all_access(cluster, within).await
    }
}
