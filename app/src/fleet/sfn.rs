//! Server functions of the inventory and fleet pages. They read the stored inventory only:
//! no page fans out to live clusters.

use leptos::prelude::*;

use crate::fleet::dto::{
    FindingsPageDto, FleetListDto, FleetPageDto, FleetQuery, ImageDto, ImageHistoryDto, VersionDto,
};
use crate::AppError;

#[cfg(feature = "ssr")]
pub(crate) mod map {
    use kqueen_charts::figures::{self, Measure};
    use kqueen_core::cluster::storage_quota::{format_size, TenantStorage};
    use kqueen_core::inventory::checks::Finding;
    use kqueen_core::inventory::fleet::{ClusterInventory, FleetCluster, FleetFilter};
    use kqueen_core::inventory::{Resources, WorkloadState};

    use crate::fleet::dto::{
        FindingDto, FleetClusterDto, FleetQuery, InventoryDto, NamespaceDto, NodeRowDto,
        ResourcesDto, TenantStorageDto, WorkloadDto,
    };
    use crate::ssr::time;
    use crate::AppError;

    pub fn resources(r: Resources) -> ResourcesDto {
        ResourcesDto {
            cpu: Measure::Cpu.words(r),
            memory: Measure::Memory.words(r),
        }
    }

    pub fn filter(q: &FleetQuery) -> Result<FleetFilter, AppError> {
        FleetFilter::parse(
            Some(&q.tenant),
            Some(&q.cluster),
            Some(&q.q),
            Some(&q.severity),
            Some(&q.check),
        )
        .map_err(|e| AppError::Invalid(e.to_string()))
    }

    pub fn finding(f: Finding) -> FindingDto {
        FindingDto {
            check: f.check,
            severity: f.severity.to_string(),
            subject: f.subject,
            message: f.message,
        }
    }

    pub fn fleet_cluster(c: &FleetCluster) -> FleetClusterDto {
        FleetClusterDto {
            id: c.id.to_string(),
            name: c.name.clone(),
            tenant: c.tenant.clone(),
            state: c.state.to_string(),
            state_label: c.state.label().to_owned(),
            provider: c.provider.clone(),
            api_version: c.api_version.clone(),
            nodes: c.nodes,
            nodes_ready: c.nodes_ready,
            allocatable: resources(c.allocatable),
            requested: resources(c.requested),
            synced: c.synced_at.map(time),
            sync_error: c.sync_error.clone(),
            etcd: c
                .shared_storage
                .map(|s| format!("{} keys, {}", s.usage.keys, format_size(s.usage.bytes))),
            etcd_read_only: c.shared_storage.is_some_and(|s| !s.usage.writable),
        }
    }

    pub fn tenant_storage(t: &TenantStorage) -> TenantStorageDto {
        let used = t.used();
        TenantStorageDto {
            tenant: t.tenant.clone(),
            clusters: u32::try_from(t.clusters.len()).unwrap_or(u32::MAX),
            used: format_size(used),
            quota: t.quota.map_or_else(|| "none".to_owned(), format_size),
            #[allow(clippy::cast_precision_loss)] // a percentage, rounded
            share: t
                .quota
                .map(|q| format!("{:.0} %", used as f64 * 100.0 / q as f64)),
            writable: t.writable(),
        }
    }

    /// The inventory section of a cluster page.
    pub fn inventory(inv: ClusterInventory, stale_after: std::time::Duration) -> InventoryDto {
        let status = inv.status.clone();
        let stale = status.as_ref().and_then(|s| s.synced_at).is_some_and(|at| {
            chrono::Utc::now()
                .signed_duration_since(at)
                .to_std()
                .is_ok_and(|age| age > stale_after)
        });
        let mut namespaces: Vec<NamespaceDto> = Vec::new();
        for w in &inv.workloads {
            if namespaces.last().map(|n| n.namespace.as_str()) != Some(w.namespace.as_str()) {
                namespaces.push(NamespaceDto {
                    namespace: w.namespace.clone(),
                    workloads: Vec::new(),
                    not_ready: 0,
                });
            }
            if let Some(ns) = namespaces.last_mut() {
                if matches!(w.state, WorkloadState::Progressing | WorkloadState::Failed) {
                    ns.not_ready += 1;
                }
                ns.workloads.push(WorkloadDto {
                    kind: w.kind.to_string(),
                    name: w.name.clone(),
                    desired: w.desired,
                    ready: w.ready,
                    state: w.state.to_string(),
                });
            }
        }
        InventoryDto {
            synced: status.as_ref().and_then(|s| s.synced_at).map(time),
            attempted: status.as_ref().map(|s| time(s.attempted_at)),
            error: status.as_ref().and_then(|s| s.error.clone()),
            api_version: status.as_ref().and_then(|s| s.api_version.clone()),
            metrics: status.as_ref().is_some_and(|s| s.metrics),
            stale,
            cpu_chart: figures::node_chart(&inv.nodes, Measure::Cpu),
            memory_chart: figures::node_chart(&inv.nodes, Measure::Memory),
            pods_chart: figures::pod_phase_chart(&inv.pods),
            pods: inv.pods.iter().map(|p| p.count).sum(),
            nodes: inv
                .nodes
                .into_iter()
                .map(|n| NodeRowDto {
                    name: n.name,
                    ready: n.ready,
                    problems: n.problems,
                    not_ready_since: n.not_ready_since.map(time),
                    kubelet: n.kubelet_version,
                    runtime: n.container_runtime,
                    os: n.os_image,
                    capacity: resources(n.capacity),
                    allocatable: resources(n.allocatable),
                    requested: resources(n.requested),
                    used: n.used.map(resources),
                    pods: n.pods,
                })
                .collect(),
            namespaces,
            findings: inv.findings.into_iter().map(finding).collect(),
        }
    }
}

/// The inventory of a cluster page: `None` before the cluster was ever synced and while it
/// is not Ready.
#[cfg(feature = "ssr")]
pub(crate) async fn cluster_inventory(
    k: &kqueen_core::Kqueen,
    actor: &kqueen_core::Actor,
    cluster_id: &str,
    ready: bool,
) -> Result<Option<crate::fleet::dto::InventoryDto>, AppError> {
    let inv = k.fleet().cluster_inventory(actor, cluster_id).await?;
    if inv.status.is_none() && !ready {
        return Ok(None);
    }
    Ok(Some(map::inventory(
        inv,
        k.inventory_settings().stale_after,
    )))
}

/// The fleet dashboard (operators; tenant admins see their tenants).
#[server(prefix = "/sfn", endpoint = "fleet")]
pub async fn fleet_page(
    tenant: Option<String>,
    attention: Option<bool>,
    offset: Option<u32>,
) -> Result<FleetPageDto, AppError> {
    use kqueen_charts::figures::{count_chart, storage_chart, totals_chart, Measure};

    use crate::fleet::dto::AttentionDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let filter = map::filter(&FleetQuery {
        tenant: tenant.unwrap_or_default(),
        ..FleetQuery::default()
    })?;
    let page = kqueen_core::page::Page::requested(None, offset);
    let attention = attention.unwrap_or(false);
    let o = k
        .fleet()
        .fleet_overview(&actor, &filter, attention, page)
        .await?;
    let explain = |a: &kqueen_core::Attention| AttentionDto {
        cluster: map::fleet_cluster(&a.cluster),
        reasons: a.reasons.clone(),
    };
    let t = &o.totals;
    Ok(FleetPageDto {
        clusters: t.clusters,
        nodes: t.nodes,
        nodes_ready: t.nodes_ready,
        capacity: map::resources(t.capacity),
        allocatable: map::resources(t.allocatable),
        requested: map::resources(t.requested),
        newest_running: o.newest_running.clone(),
        newest_offered: o.newest_offered.clone(),
        state_chart: count_chart("Clusters by state", "Clusters", &o.by_state),
        provider_chart: count_chart("Clusters by provider", "Clusters", &o.by_provider),
        version_chart: count_chart("Clusters by Kubernetes version", "Clusters", &o.by_version),
        cpu_chart: totals_chart(t.capacity, t.allocatable, t.requested, t.used, Measure::Cpu),
        memory_chart: totals_chart(
            t.capacity,
            t.allocatable,
            t.requested,
            t.used,
            Measure::Memory,
        ),
        attention: o.attention.iter().map(explain).collect(),
        attention_total: o.attention_total,
        attention_only: attention,
        rows: o.clusters.iter().map(explain).collect(),
        total: o.clusters_total,
        offset: page.offset(),
        limit: page.limit(),
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
        storage_chart: (!o.storage.is_empty()).then(|| storage_chart(&o.storage)),
        storage: o.storage.iter().map(map::tenant_storage).collect(),
    })
}

/// Images of the visible clusters, with where each runs.
#[server(prefix = "/sfn", endpoint = "fleet_images")]
pub async fn fleet_images_page(
    query: FleetQuery,
    offset: Option<u32>,
) -> Result<FleetListDto<ImageDto>, AppError> {
    use kqueen_core::page::Page;

    use crate::fleet::dto::UsageDto;
    use crate::ssr::time;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let offset = offset.unwrap_or(0);
    let (images, total) = k
        .fleet()
        .fleet_images(
            &actor,
            &map::filter(&query)?,
            Page::new(Page::DEFAULT_LIMIT, offset),
        )
        .await?;
    let rows = images
        .into_iter()
        .map(|i| ImageDto {
            image: i.image,
            registry: i.registry,
            repository: i.repository,
            tag: i.tag,
            digest: i.digest,
            clusters: i.clusters,
            first_seen: time(i.first_seen),
            usages: i
                .usages
                .into_iter()
                .map(|u| UsageDto {
                    cluster_id: u.cluster_id.to_string(),
                    cluster: u.cluster,
                    tenant: u.tenant,
                    namespace: u.namespace,
                    workload: format!("{}/{}", u.workload_kind, u.workload_name),
                    container: u.container,
                    pods: u.pods,
                    first_seen: u.first_seen.map(time),
                    last_seen: u.last_seen.map(time),
                })
                .collect(),
        })
        .collect();
    Ok(FleetListDto {
        rows,
        total,
        offset,
        limit: Page::DEFAULT_LIMIT,
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
    })
}

/// The image history of the visible clusters: per cluster and image, first and last seen.
#[server(prefix = "/sfn", endpoint = "fleet_image_history")]
pub async fn fleet_image_history_page(
    query: FleetQuery,
    offset: Option<u32>,
) -> Result<FleetListDto<ImageHistoryDto>, AppError> {
    use kqueen_core::page::Page;

    use crate::ssr::time;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let offset = offset.unwrap_or(0);
    let (history, total) = k
        .fleet()
        .fleet_image_history(
            &actor,
            &map::filter(&query)?,
            Page::new(Page::DEFAULT_LIMIT, offset),
        )
        .await?;
    Ok(FleetListDto {
        rows: history
            .into_iter()
            .map(|h| ImageHistoryDto {
                cluster_id: h.cluster_id.to_string(),
                cluster: h.cluster,
                tenant: h.tenant,
                image: h.image,
                digest: h.digest,
                first_seen: time(h.first_seen),
                last_seen: time(h.last_seen),
                present: h.present,
            })
            .collect(),
        total,
        offset,
        limit: Page::DEFAULT_LIMIT,
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
    })
}

/// API server and node versions of the visible clusters.
#[server(prefix = "/sfn", endpoint = "fleet_versions")]
pub async fn fleet_versions_page(
    query: FleetQuery,
    offset: Option<u32>,
) -> Result<FleetListDto<VersionDto>, AppError> {
    use kqueen_core::page::Page;

    use crate::ssr::time;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let offset = offset.unwrap_or(0);
    let (versions, total) = k
        .fleet()
        .fleet_versions(
            &actor,
            &map::filter(&query)?,
            Page::new(Page::DEFAULT_LIMIT, offset),
        )
        .await?;
    Ok(FleetListDto {
        rows: versions
            .into_iter()
            .map(|v| VersionDto {
                cluster_id: v.cluster_id.to_string(),
                cluster: v.cluster,
                tenant: v.tenant,
                api_version: v.api_version,
                synced: v.synced_at.map(time),
                node: v.node,
                kubelet: v.kubelet_version,
                runtime: v.container_runtime,
                os: v.os_image,
                ready: v.ready,
            })
            .collect(),
        total,
        offset,
        limit: Page::DEFAULT_LIMIT,
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
    })
}

/// Audit-check findings of the visible clusters, most severe first, with their counts.
#[server(prefix = "/sfn", endpoint = "fleet_findings")]
pub async fn fleet_findings_page(
    query: FleetQuery,
    offset: Option<u32>,
) -> Result<FindingsPageDto, AppError> {
    use kqueen_charts::figures::findings_chart;
    use kqueen_core::page::Page;

    use crate::fleet::dto::FindingRowDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let filter = map::filter(&query)?;
    let offset = offset.unwrap_or(0);
    let (findings, total) = k
        .fleet()
        .fleet_findings(&actor, &filter, Page::new(Page::DEFAULT_LIMIT, offset))
        .await?;
    let counts = k.fleet().fleet_finding_counts(&actor, &filter).await?;
    Ok(FindingsPageDto {
        chart: findings_chart(&counts),
        counts: counts
            .into_iter()
            .map(|c| (c.severity.to_string(), c.check, c.count))
            .collect(),
        list: FleetListDto {
            rows: findings
                .into_iter()
                .map(|f| FindingRowDto {
                    cluster_id: f.cluster_id.to_string(),
                    cluster: f.cluster,
                    tenant: f.tenant,
                    finding: map::finding(f.finding),
                })
                .collect(),
            total,
            offset,
            limit: Page::DEFAULT_LIMIT,
            tenants: crate::ssr::filter_tenants(&k, &actor).await?,
        },
    })
}
