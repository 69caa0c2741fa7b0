//! The use cases the operation engine calls back ([`crate::engine::EngineHooks`]).

use std::time::Duration;

use async_trait::async_trait;

use super::Kqueen;
use crate::cluster::Cluster;
use crate::engine::EngineHooks;

#[async_trait]
impl EngineHooks for Kqueen {
    fn sweep_access_soon(&self) {
        Kqueen::sweep_access_soon(self)
    }

    async fn revoke_all_access(&self, cluster: &Cluster, within: Duration) -> Option<String> {
        Kqueen::revoke_all_access(self, cluster, within).await
    }
}
