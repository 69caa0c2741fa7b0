//! Use cases of the fleet inventory: syncing clusters, the cluster page's inventory, the fleet
//! dashboard, the fleet audit queries (images, versions, findings) and the metrics scrape.

mod dashboard;
mod dashboard_cache;
mod metrics;

pub use dashboard::ATTENTION_SHOWN;

pub use metrics::FleetMetrics;
mod storage_quota;
mod sync;
mod views;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use super::providers::Catalog;
use crate::cluster::storage_quota::TenantStorage;
use crate::deps::Deps;
use crate::inventory::fleet::FleetCluster;
use crate::inventory::{minor_version, Resources};
use crate::page::Page;
use crate::provisioner::ParamKind;
use crate::Result;
use std::sync::Arc;

/// How the inventory sync runs.
#[derive(Debug, Clone)]
pub struct InventorySettings {
    /// Clusters synced at the same time.
    pub concurrency: usize,
    /// Time allowed for one cluster's whole sync.
    pub timeout: Duration,
    /// A cluster whose last good sync is older than this is shown as stale.
    pub stale_after: Duration,
    /// Image sources allowed by the registry check (empty: check off).
    pub allowed_registries: Vec<String>,
    /// The oldest supported Kubernetes minor version; none: two minors behind the newest
    /// version offered by a template (upstream supports three). What clusters report never
    /// counts: one cluster reporting v1.99 must not make every other cluster unsupported.
    pub min_kubernetes: Option<(u32, u32)>,
    /// How long a fleet dashboard answer is reused (0: never); see `dashboard_cache`.
    pub dashboard_max_age: Duration,
}

impl Default for InventorySettings {
    fn default() -> Self {
        Self {
            concurrency: 8,
            timeout: Duration::from_secs(30),
            stale_after: Duration::from_secs(30 * 60),
            allowed_registries: Vec::new(),
            min_kubernetes: None,
            dashboard_max_age: Duration::from_secs(10),
        }
    }
}

/// How one cluster's sync went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSync {
    pub cluster_id: Uuid,
    pub cluster: String,
    pub tenant: String,
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// Counts by a label (state, provider, version), biggest first.
pub type Tally = Vec<(String, u64)>;

/// Node totals over the visible fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetTotals {
    pub clusters: u64,
    pub nodes: u64,
    pub nodes_ready: u64,
    pub capacity: Resources,
    pub allocatable: Resources,
    pub requested: Resources,
    /// Over the clusters that report usage.
    pub used: Option<Resources>,
}

/// A cluster and why it needs attention (no reasons: it does not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    pub cluster: FleetCluster,
    pub reasons: Vec<String>,
}

/// The fleet dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetOverview {
    pub by_state: Tally,
    pub by_provider: Tally,
    /// By Kubernetes minor version (`1.33`), `unknown` for clusters never synced.
    pub by_version: Tally,
    pub totals: FleetTotals,
    /// The first [`ATTENTION_SHOWN`] clusters needing attention, by tenant and name.
    pub attention: Vec<Attention>,
    /// How many clusters need attention.
    pub attention_total: u64,
    /// The highest version any synced cluster's API server reports (`v1.33.2`), as it
    /// reports it; none before a cluster was synced. Shown, never measured against: any
    /// cluster could claim v1.99.
    pub newest_running: Option<String>,
    /// The newest minor version offered by a template, or the configured minimum when that
    /// is newer (`1.34`); none when no template offers a version and no minimum is set.
    /// "Behind" (a reason for attention) is measured against this one only.
    pub newest_offered: Option<String>,
    /// One page of the clusters (or of those needing attention), each with its reasons
    /// (none when it is well).
    pub clusters: Vec<Attention>,
    /// How many clusters that page is of.
    pub clusters_total: u64,
    /// Operators: per tenant (of the filter), what its clusters keep in shared storage
    /// against its quota. Empty for everyone else.
    pub storage: Vec<TenantStorage>,
}

/// Sums counts by label.
fn tally(items: impl IntoIterator<Item = (String, u64)>) -> Tally {
    let mut map: BTreeMap<String, u64> = BTreeMap::new();
    for (label, count) in items {
        *map.entry(label).or_default() += count;
    }
    let mut v: Tally = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn format_minor((major, minor): (u32, u32)) -> String {
    format!("{major}.{minor}")
}

/// `v1.33.2-gke.100` → `(1, 33, 2)`; a version without a readable patch counts as `.0`.
fn version_key(version: &str) -> Option<(u32, u32, u32)> {
    let (major, minor) = minor_version(version)?;
    let patch = version
        .trim()
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .nth(2)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some((major, minor, patch))
}

/// The highest of the versions the clusters report, as reported (`v1.33.2`).
fn newest_running<'a>(versions: impl IntoIterator<Item = &'a str>) -> Option<String> {
    versions
        .into_iter()
        .filter_map(|v| version_key(v).map(|k| (k, v.trim())))
        .max_by_key(|(k, _)| *k)
        .map(|(_, v)| v.to_owned())
}

/// Inventories of the clusters (sync, the cluster page's view) and the fleet views over them.
#[derive(Clone)]
pub struct Fleet {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    catalog: Catalog,
    admin: ClusterAdmin,
    settings: Arc<InventorySettings>,
    /// This process's inventory syncs by outcome (for `/metrics`).
    syncs: Arc<crate::counter::OutcomeCounter>,
    /// Dashboard answers reused for a few seconds.
    dashboards: Arc<dashboard_cache::AnswerCache<FleetOverview>>,
}

impl Fleet {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        clusters: &Clusters,
        catalog: &Catalog,
        admin: &ClusterAdmin,
        settings: Arc<InventorySettings>,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            catalog: catalog.clone(),
            admin: admin.clone(),
            dashboards: Arc::new(dashboard_cache::AnswerCache::new(
                settings.dashboard_max_age,
            )),
            settings,
            syncs: Arc::default(),
        }
    }

    /// This process's inventory syncs so far (background rounds and requested ones).
    pub fn sync_counts(&self) -> crate::counter::Outcomes {
        self.syncs.get()
    }
}

impl Fleet {
    /// The version the fleet is measured against ("behind"): the newest minor version a
    /// template offers, or the configured minimum when that is newer. Versions reported by
    /// clusters are not trusted for this: any cluster could claim v1.99.
    async fn newest_offered(&self) -> Result<Option<(u32, u32)>> {
        Ok(self
            .newest_offered_version()
            .await?
            .max(self.settings.min_kubernetes))
    }

    /// The newest `kubernetes_version` any enabled template offers (its options or default).
    async fn newest_offered_version(&self) -> Result<Option<(u32, u32)>> {
        let mut newest = None;
        for t in self
            .deps
            .store
            .list_templates(None, Page::first(Page::MAX_LIMIT))
            .await?
        {
            if t.disabled {
                continue;
            }
            let Ok(view) = self.catalog.template_view(t).await else {
                continue;
            };
            for p in &view.schema.0 {
                if p.name != "kubernetes_version" {
                    continue;
                }
                let offered: Vec<&str> = match &p.kind {
                    ParamKind::Enum { options, .. } => options.iter().map(String::as_str).collect(),
                    ParamKind::String {
                        default: Some(d), ..
                    } => vec![d.as_str()],
                    _ => Vec::new(),
                };
                for v in offered {
                    newest = newest.max(minor_version(v));
                }
            }
        }
        Ok(newest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_running_compares_whole_versions() {
        assert_eq!(
            newest_running(["v1.33.2", "v1.33.10", "v1.32.9"]).as_deref(),
            Some("v1.33.10")
        );
        assert_eq!(
            newest_running(["v1.29.4-gke.100", "v1.31+k3s1", "latest"]).as_deref(),
            Some("v1.31+k3s1")
        );
        assert_eq!(newest_running(["1.34", "v1.33.2"]).as_deref(), Some("1.34"));
        assert_eq!(newest_running(["latest", ""]), None);
        assert_eq!(newest_running([]), None);
    }

    #[test]
    fn version_keys() {
        assert_eq!(version_key("v1.33.2"), Some((1, 33, 2)));
        assert_eq!(version_key("1.30"), Some((1, 30, 0)));
        assert_eq!(version_key("v1.29.4-gke.100"), Some((1, 29, 4)));
        assert_eq!(version_key("nope"), None);
    }
}
