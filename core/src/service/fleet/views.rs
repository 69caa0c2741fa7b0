//! What the fleet pages read: a cluster's inventory and the audit queries
//! (images, versions, findings), each within what the actor may see.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Fleet;
use crate::audit::action;
use crate::identity::Role;
use crate::inventory::fleet::{
    ClusterInventory, FindingCount, FindingRow, FleetFilter, ImageHistoryRow, ImageRow, ImageUsage,
    VersionRow,
};
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::{Actor, Error, Result};

impl Fleet {
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
    pub(super) async fn fleet_scope(
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
