//! What `/metrics` reports about the fleet (operators only): every live cluster with its
//! state, provider, last inventory sync and shared storage, and operations by kind and state
//! (from the database: every replica answers the same); and this process's own counts of
//! inventory syncs and vault operations.

use super::Fleet;
use crate::audit::action;
use crate::cluster::{OperationKind, OperationState};
use crate::counter::Outcomes;
use crate::inventory::fleet::{FleetCluster, FleetFilter};
use crate::policy::Permission;
use crate::vault::VaultCounts;
use crate::{Actor, Result};

/// The fleet as a metrics scrape sees it.
#[derive(Debug, Clone)]
pub struct FleetMetrics {
    /// Every live cluster (shared storage included).
    pub clusters: Vec<FleetCluster>,
    /// How many operations there are of each kind in each state.
    pub operations: Vec<(OperationKind, OperationState, u64)>,
    /// This process's inventory syncs since it started.
    pub inventory_syncs: Outcomes,
    /// This process's vault operations since it started.
    pub vault: VaultCounts,
}

impl Fleet {
    /// The fleet's figures for a metrics scrape (operators, e.g. Prometheus with an
    /// operator's API token).
    pub async fn metrics(&self, actor: &Actor) -> Result<FleetMetrics> {
        self.guard
            .authorize(
                actor,
                Permission::ListAllTenants,
                action::FLEET_VIEW,
                "metrics",
                None,
            )
            .await?;
        let clusters = self
            .deps
            .store
            .fleet_clusters(&FleetFilter::default(), None)
            .await?;
        let operations = self.deps.store.operation_counts().await?;
        Ok(FleetMetrics {
            clusters,
            operations,
            inventory_syncs: self.sync_counts(),
            vault: self.deps.vault.counts(),
        })
    }
}
