//! The fleet dashboard: counts, totals and what needs attention, aggregated by the database
//! whatever the fleet's size, and one page of clusters at a time.

use chrono::{DateTime, Utc};

use super::{format_minor, newest_running, tally, Attention, Fleet, FleetOverview, FleetTotals};
use crate::cluster::ClusterState;
use crate::identity::Role;
use crate::inventory::fleet::{AttentionRule, FleetCluster, FleetFilter, FleetGroup};
use crate::inventory::minor_version;
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::{Actor, Result};
use uuid::Uuid;

/// How many clusters needing attention the dashboard lists before the rest are paged
/// through with `attention_only`.
pub const ATTENTION_SHOWN: u32 = 20;

impl Fleet {
    /// The fleet dashboard: operators see every cluster, tenant admins their tenants'. The
    /// counts and totals cover every cluster of the filter; `clusters` is one page of them
    /// (of those needing attention with `attention_only`), by tenant and name. An answer is
    /// reused for a few seconds (see [`super::dashboard_cache`]) and shared, not copied, by the
    /// requests it answers: callers map what they show from it.
    pub async fn fleet_overview(
        &self,
        actor: &Actor,
        filter: &FleetFilter,
        attention_only: bool,
        page: Page,
    ) -> Result<std::sync::Arc<FleetOverview>> {
        let mut scope = self.fleet_scope(actor, Role::Admin, "fleet").await?;
        if let Some(tenants) = scope.as_mut() {
            tenants.sort_unstable();
        }
        // Shared storage is the operators' business, as on the cluster page.
        let operator = policy::check(actor, Permission::ListAllTenants).is_ok();
        let key = format!(
            "{scope:?} {operator} {attention_only} {}+{} {filter:?}",
            page.offset(),
            page.limit()
        );
        let version = self.deps.store.clusters_version().await?;
        let answer = self
            .dashboards
            .get(key, version, || {
                self.read_overview(scope.as_deref(), operator, filter, attention_only, page)
            })
            .await?;
        Ok(answer)
    }

    /// The dashboard as the database holds it now.
    async fn read_overview(
        &self,
        scope: Option<&[Uuid]>,
        operator: bool,
        filter: &FleetFilter,
        attention_only: bool,
        page: Page,
    ) -> Result<FleetOverview> {
        let newest = self.newest_offered().await?;
        let stale_after =
            chrono::Duration::from_std(self.settings.stale_after).unwrap_or(chrono::Duration::MAX);
        let mut rule = AttentionRule {
            stale_before: Utc::now()
                .checked_sub_signed(stale_after)
                .unwrap_or(DateTime::<Utc>::MIN_UTC),
            storage: operator,
            behind: Vec::new(),
        };
        let store = &self.deps.store;
        let groups = store.fleet_groups(filter, scope, &rule).await?;
        rule.behind = behind(&groups, newest);
        let attention_total = groups
            .iter()
            .map(|g| {
                if g.api_version
                    .as_ref()
                    .is_some_and(|v| rule.behind.contains(v))
                {
                    g.clusters
                } else {
                    g.attention
                }
            })
            .sum();
        let nodes = store.fleet_node_totals(filter, scope).await?;
        let explain = |clusters: Vec<FleetCluster>| -> Vec<Attention> {
            clusters
                .into_iter()
                .map(|mut cluster| {
                    if !operator {
                        cluster.shared_storage = None;
                    }
                    let reasons = reasons(&cluster, &rule, newest);
                    Attention { cluster, reasons }
                })
                .collect()
        };
        let clusters = explain(
            store
                .fleet_page(filter, scope, attention_only.then_some(&rule), page)
                .await?,
        );
        let shown = ATTENTION_SHOWN as usize;
        let attention = if attention_total == 0 {
            Vec::new()
        } else if attention_only && page.offset() == 0 && page.limit() >= ATTENTION_SHOWN {
            // This page starts with them.
            clusters.iter().take(shown).cloned().collect()
        } else {
            explain(
                store
                    .fleet_page(filter, scope, Some(&rule), Page::first(ATTENTION_SHOWN))
                    .await?,
            )
        };
        let storage = if operator {
            let mut storage = store.tenant_storage().await?;
            storage.retain(|t| filter.tenant.as_ref().is_none_or(|f| *f == t.tenant));
            storage
        } else {
            Vec::new()
        };
        let total: u64 = groups.iter().map(|g| g.clusters).sum();
        Ok(FleetOverview {
            by_state: tally(
                groups
                    .iter()
                    .map(|g| (g.state.label().to_owned(), g.clusters)),
            ),
            by_provider: tally(groups.iter().map(|g| (g.provider.clone(), g.clusters))),
            by_version: tally(groups.iter().map(|g| {
                let minor = g.api_version.as_deref().and_then(minor_version);
                (
                    minor.map_or_else(|| "unknown".to_owned(), format_minor),
                    g.clusters,
                )
            })),
            totals: FleetTotals {
                clusters: total,
                nodes: nodes.nodes,
                nodes_ready: nodes.nodes_ready,
                capacity: nodes.capacity,
                allocatable: nodes.allocatable,
                requested: nodes.requested,
                used: nodes.used,
            },
            attention,
            attention_total,
            newest_running: newest_running(groups.iter().filter_map(|g| g.api_version.as_deref())),
            newest_offered: newest.map(format_minor),
            clusters,
            clusters_total: if attention_only {
                attention_total
            } else {
                total
            },
            storage,
        })
    }
}

/// The API versions, as the groups report them, whose minor is behind `newest`.
fn behind(groups: &[FleetGroup], newest: Option<(u32, u32)>) -> Vec<String> {
    let Some(newest) = newest else {
        return Vec::new();
    };
    let mut behind: Vec<String> = groups
        .iter()
        .filter_map(|g| g.api_version.as_ref())
        .filter(|v| minor_version(v).is_some_and(|m| m < newest))
        .cloned()
        .collect();
    behind.sort_unstable();
    behind.dedup();
    behind
}

/// Why a cluster needs attention by `rule`, in words (empty: it does not).
fn reasons(c: &FleetCluster, rule: &AttentionRule, newest: Option<(u32, u32)>) -> Vec<String> {
    let when = |t: DateTime<Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
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
            (Some(at), None) if at < rule.stale_before => {
                reasons.push(format!("stale: last synced {}", when(at)));
            }
            _ => {}
        }
    }
    if rule.storage && c.shared_storage.is_some_and(|s| !s.usage.writable) {
        reasons.push("read-only in the shared etcd (tenant over its storage quota)".to_owned());
    }
    if c.nodes_ready < c.nodes {
        let since = c
            .not_ready_since
            .map(|t| format!(" since {}", when(t)))
            .unwrap_or_default();
        reasons.push(format!(
            "{} of {} nodes not Ready{since}",
            c.nodes - c.nodes_ready,
            c.nodes
        ));
    }
    if let (Some(n), Some(v)) = (newest, c.api_version.as_deref().and_then(minor_version)) {
        if v < n {
            reasons.push(format!(
                "Kubernetes {} is behind {}, the newest offered",
                format_minor(v),
                format_minor(n)
            ));
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(version: Option<&str>) -> FleetGroup {
        FleetGroup {
            state: ClusterState::Ready,
            provider: "p".into(),
            api_version: version.map(str::to_owned),
            clusters: 1,
            attention: 0,
        }
    }

    #[test]
    fn versions_behind_are_those_of_an_older_minor() {
        let groups = [
            group(Some("v1.33.2")),
            group(Some("v1.34.0")),
            group(Some("v1.32.9")),
            group(Some("v1.33.2")),
            group(Some("latest")),
            group(None),
        ];
        assert_eq!(
            behind(&groups, Some((1, 34))),
            vec!["v1.32.9".to_owned(), "v1.33.2".to_owned()]
        );
        assert!(behind(&groups, None).is_empty());
        assert!(behind(&groups, Some((1, 30))).is_empty());
    }
}
