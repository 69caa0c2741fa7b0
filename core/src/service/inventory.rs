//! Use cases of the fleet inventory: syncing clusters, the cluster page's inventory, the fleet
//! dashboard and the fleet audit queries (images, versions, findings).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use super::providers::Catalog;
use crate::audit::{action, AuditEvent, Outcome};
use crate::cluster::{Cluster, ClusterState};
use crate::deps::Deps;
use crate::identity::Role;
use crate::inventory::checks::{self, AuditCheck, CheckSettings};
use crate::inventory::fleet::{
    ClusterInventory, FindingCount, FindingRow, FleetCluster, FleetFilter, ImageHistoryRow,
    ImageRow, ImageUsage, VersionRow,
};
use crate::inventory::{minor_version, Resources};
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::provisioner::ParamKind;
use crate::{Actor, Error, Result};
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
}

impl Default for InventorySettings {
    fn default() -> Self {
        Self {
            concurrency: 8,
            timeout: Duration::from_secs(30),
            stale_after: Duration::from_secs(30 * 60),
            allowed_registries: Vec::new(),
            min_kubernetes: None,
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

/// A cluster and why it needs attention.
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
    pub attention: Vec<Attention>,
    /// The newest minor version offered by a template or configured as the minimum (`1.34`).
    pub newest_version: Option<String>,
    pub clusters: Vec<FleetCluster>,
}

fn tally(items: impl IntoIterator<Item = String>) -> Tally {
    let mut map: BTreeMap<String, u64> = BTreeMap::new();
    for i in items {
        *map.entry(i).or_default() += 1;
    }
    let mut v: Tally = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn format_minor((major, minor): (u32, u32)) -> String {
    format!("{major}.{minor}")
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
            settings,
        }
    }
}

impl Fleet {
    /// Syncs every Ready cluster, `concurrency` at a time, each within `timeout`: one dead
    /// cluster costs its own timeout and nothing else. A system task (the server's timer).
    pub async fn sync_inventory(&self) -> Result<Vec<ClusterSync>> {
        let clusters = self.deps.store.ready_clusters().await?;
        let checks = self.audit_checks().await?;
        Ok(stream::iter(clusters)
            .map(|c| {
                let checks = &checks;
                async move { self.sync_one(&c, checks).await }
            })
            .buffer_unordered(self.settings.concurrency.max(1))
            .collect::<Vec<_>>()
            .await)
    }

    /// Syncs one cluster now (any member of its tenant; audited).
    pub async fn sync_cluster_inventory(&self, actor: &Actor, id: &str) -> Result<ClusterSync> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::INVENTORY_SYNC)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                action::INVENTORY_SYNC,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        if cluster.state != ClusterState::Ready {
            let e = Error::Conflict(format!(
                "the cluster is {}; only Ready clusters are synced",
                cluster.state.label()
            ));
            self.guard
                .audit_refusal(
                    actor,
                    action::INVENTORY_SYNC,
                    cluster.name.as_str(),
                    Some(cluster.tenant_id),
                    &e,
                )
                .await?;
            return Err(e);
        }
        let checks = self.audit_checks().await?;
        let result = self.sync_one(&cluster, &checks).await;
        let outcome = if result.error.is_none() {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        let mut event = AuditEvent::now(
            actor,
            action::INVENTORY_SYNC,
            cluster.name.to_string(),
            outcome,
        );
        event.tenant_id = Some(cluster.tenant_id);
        if let Some(e) = &result.error {
            event = event.with_detail(e.clone());
        }
        self.deps.store.record_audit(&event).await?;
        Ok(result)
    }

    /// Reads one cluster and stores the result. Every failure, storing included, is this
    /// cluster's result (recorded as its sync error when the store takes it), never an error
    /// that would fail the other clusters' syncs.
    async fn sync_one(&self, cluster: &Cluster, checks: &[Box<dyn AuditCheck>]) -> ClusterSync {
        let started = Instant::now();
        let timeout = self.settings.timeout;
        let read = async {
            let (client, _) = self.admin.admin_client(cluster).await?;
            crate::inventory::collect(&client)
                .await
                .map_err(|e| Error::Conflict(e.to_string()))
        };
        let outcome = match tokio::time::timeout(timeout, read).await {
            Ok(Ok(snapshot)) => Ok(snapshot),
            Ok(Err(e)) => Err(match e {
                Error::Conflict(m) => m,
                other => other.to_string(),
            }),
            Err(_) => Err(format!("timed out after {} s", timeout.as_secs())),
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let now = crate::clock::now();
        let outcome = match outcome {
            Ok(snapshot) => {
                let findings = checks::run_all(checks, &snapshot);
                self.deps.store
                    .save_inventory(cluster.id, &snapshot, &findings, now, duration_ms)
                    .await
                    .map_err(|e| {
                        tracing::error!(cluster = %cluster.name, tenant = %cluster.tenant_slug, error = %e, "storing the inventory failed");
                        "storing the inventory failed".to_owned()
                    })
            }
            Err(e) => Err(e),
        };
        let error = match outcome {
            Ok(()) => None,
            Err(e) => {
                tracing::warn!(cluster = %cluster.name, tenant = %cluster.tenant_slug, error = %e, "inventory sync failed");
                if let Err(store) = self
                    .deps
                    .store
                    .save_sync_failure(cluster.id, &e, now, duration_ms)
                    .await
                {
                    tracing::error!(cluster = %cluster.name, error = %store, "recording the sync failure failed");
                }
                Some(e)
            }
        };
        ClusterSync {
            cluster_id: cluster.id,
            cluster: cluster.name.to_string(),
            tenant: cluster.tenant_slug.clone(),
            error,
            duration_ms,
        }
    }

    /// The configured checks, with the version floor derived when not configured.
    async fn audit_checks(&self) -> Result<Vec<Box<dyn AuditCheck>>> {
        let min_kubernetes = match self.settings.min_kubernetes {
            Some(v) => Some(v),
            None => self
                .newest_offered_version()
                .await?
                .map(|(major, minor)| (major, minor.saturating_sub(2))),
        };
        Ok(checks::builtin(&CheckSettings {
            allowed_registries: self.settings.allowed_registries.clone(),
            min_kubernetes,
        }))
    }

    /// The version the fleet is measured against: the newest minor version a template offers,
    /// or the configured minimum when that is newer. Versions reported by clusters are not
    /// trusted for this: any cluster could claim v1.99.
    async fn newest_version(&self) -> Result<Option<(u32, u32)>> {
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

    /// The stored inventory of a cluster the actor may view.
    pub async fn cluster_inventory(&self, actor: &Actor, id: &str) -> Result<ClusterInventory> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::CLUSTER_VIEW)
            .await?;
        self.deps.store.cluster_inventory(cluster.id).await
    }

    /// Tenants whose clusters the actor sees in fleet views: all for operators; otherwise
    /// the tenants where the actor has at least `role`.
    async fn fleet_scope(
        &self,
        actor: &Actor,
        role: Role,
        what: &str,
    ) -> Result<Option<Vec<Uuid>>> {
        let scope = if policy::check(actor, Permission::ListAllTenants).is_ok() {
            Ok(None)
        } else {
            match actor.identity() {
                None => Err(Error::Unauthenticated),
                Some(who) => {
                    let tenants: Vec<Uuid> = who
                        .memberships
                        .iter()
                        .filter(|m| m.role >= role)
                        .map(|m| m.tenant_id)
                        .collect();
                    if tenants.is_empty() {
                        Err(Error::Forbidden)
                    } else {
                        Ok(Some(tenants))
                    }
                }
            }
        };
        match scope {
            Ok(s) => Ok(s),
            Err(e) => {
                self.guard
                    .audit_refusal(actor, action::FLEET_VIEW, what, None, &e)
                    .await?;
                Err(e)
            }
        }
    }

    /// The fleet dashboard: operators see every cluster, tenant admins their tenants'.
    pub async fn fleet_overview(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
    ) -> Result<FleetOverview> {
        let scope = self.fleet_scope(actor, Role::Admin, "fleet").await?;
        let clusters = self
            .deps
            .store
            .fleet_clusters(filter, scope.as_deref())
            .await?;
        let newest = self.newest_version().await?;
        let now = Utc::now();
        let stale_after =
            chrono::Duration::from_std(self.settings.stale_after).unwrap_or(chrono::Duration::MAX);
        let mut totals = FleetTotals {
            clusters: clusters.len() as u64,
            ..FleetTotals::default()
        };
        let mut attention = Vec::new();
        for c in &clusters {
            totals.nodes += u64::from(c.nodes);
            totals.nodes_ready += u64::from(c.nodes_ready);
            totals.capacity.add(c.capacity);
            totals.allocatable.add(c.allocatable);
            totals.requested.add(c.requested);
            if let Some(u) = c.used {
                totals.used.get_or_insert_with(Resources::default).add(u);
            }
            let mut reasons = Vec::new();
            if c.state == ClusterState::Error {
                reasons.push(match &c.error {
                    Some(e) => format!("Error: {e}"),
                    None => "Error".to_owned(),
                });
            }
            if c.state == ClusterState::Ready {
                match (c.synced_at, &c.sync_error) {
                    (None, None) => reasons.push("never synced".to_owned()),
                    (_, Some(e)) => reasons.push(format!("last sync failed: {e}")),
                    (Some(at), None) if now - at > stale_after => {
                        reasons.push(format!(
                            "stale: last synced {}",
                            at.format("%Y-%m-%d %H:%M UTC")
                        ));
                    }
                    _ => {}
                }
            }
            if c.nodes_ready < c.nodes {
                reasons.push(format!(
                    "{} of {} nodes not Ready",
                    c.nodes - c.nodes_ready,
                    c.nodes
                ));
            }
            if let (Some(n), Some(v)) = (newest, c.api_version.as_deref().and_then(minor_version)) {
                if v < n {
                    reasons.push(format!(
                        "Kubernetes {} is behind {}",
                        format_minor(v),
                        format_minor(n)
                    ));
                }
            }
            if !reasons.is_empty() {
                attention.push(Attention {
                    cluster: c.clone(),
                    reasons,
                });
            }
        }
        Ok(FleetOverview {
            by_state: tally(clusters.iter().map(|c| c.state.label().to_owned())),
            by_provider: tally(clusters.iter().map(|c| c.provider.clone())),
            by_version: tally(clusters.iter().map(|c| {
                c.api_version
                    .as_deref()
                    .and_then(minor_version)
                    .map_or_else(|| "unknown".to_owned(), format_minor)
            })),
            totals,
            attention,
            newest_version: newest.map(format_minor),
            clusters,
        })
    }

    /// Images running in the visible clusters, with where each runs.
    pub async fn fleet_images(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
        page: Page,
    ) -> Result<(Vec<ImageRow>, u64)> {
        let scope = self.fleet_scope(actor, Role::Member, "images").await?;
        let (images, total) = self
            .deps
            .store
            .list_images(filter, scope.as_deref(), page)
            .await?;
        let refs: Vec<String> = images.iter().map(|i| i.image.clone()).collect();
        let mut usages: BTreeMap<String, Vec<ImageUsage>> = BTreeMap::new();
        for u in self
            .deps
            .store
            .image_usages(&refs, filter, scope.as_deref())
            .await?
        {
            usages.entry(u.image.clone()).or_default().push(u);
        }
        let rows = images
            .into_iter()
            .map(|i| {
                let parsed = crate::inventory::ImageRef::parse(&i.image);
                ImageRow {
                    usages: usages.remove(&i.image).unwrap_or_default(),
                    registry: parsed.as_ref().map(|p| p.registry.clone()),
                    repository: parsed.as_ref().map(|p| p.repository.clone()),
                    tag: parsed.as_ref().and_then(|p| p.tag.clone()),
                    digest: parsed.and_then(|p| p.digest),
                    image: i.image,
                    clusters: i.clusters,
                    first_seen: i.first_seen,
                }
            })
            .collect();
        Ok((rows, total))
    }

    /// The image history of the visible clusters: per cluster and image, first and last
    /// seen, and whether it still runs ("since when does cluster X run image Y").
    pub async fn fleet_image_history(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
        page: Page,
    ) -> Result<(Vec<ImageHistoryRow>, u64)> {
        let scope = self
            .fleet_scope(actor, Role::Member, "image history")
            .await?;
        self.deps
            .store
            .list_image_history(filter, scope.as_deref(), page)
            .await
    }

    /// API server and node versions of the visible clusters.
    pub async fn fleet_versions(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
        page: Page,
    ) -> Result<(Vec<VersionRow>, u64)> {
        let scope = self.fleet_scope(actor, Role::Member, "versions").await?;
        self.deps
            .store
            .list_versions(filter, scope.as_deref(), page)
            .await
    }

    /// Audit-check findings of the visible clusters, most severe first, with the total.
    pub async fn fleet_findings(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
        page: Page,
    ) -> Result<(Vec<FindingRow>, u64)> {
        let scope = self.fleet_scope(actor, Role::Member, "findings").await?;
        self.deps
            .store
            .list_findings(filter, scope.as_deref(), page)
            .await
    }

    /// Findings per severity and check, over `filter` without its severity and check (the
    /// findings page's summary).
    pub async fn fleet_finding_counts(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
    ) -> Result<Vec<FindingCount>> {
        let scope = self.fleet_scope(actor, Role::Member, "findings").await?;
        let filter = FleetFilter {
            severity: None,
            check: None,
            ..filter.clone()
        };
        self.deps
            .store
            .count_findings(&filter, scope.as_deref())
            .await
    }
}
