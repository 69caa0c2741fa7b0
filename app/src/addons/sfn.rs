//! Reads of the addons' pages: identify the caller, call one use case, map to DTOs.

use leptos::prelude::*;

use crate::addons::dto::{CatalogDto, ClusterAddonsDto, FleetAddonsDto};
use crate::AppError;

/// Every catalog addon with its state in the cluster (asked of the cluster now).
#[server(prefix = "/sfn", endpoint = "cluster_addons")]
pub async fn cluster_addons(id: String) -> Result<ClusterAddonsDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let addons = k
        .addons()
        .for_cluster(&actor, &id)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(ClusterAddonsDto {
        addons,
        kept: crate::kept::take().await,
    })
}

/// Which addon version runs on which cluster, counted per version; for operators, the bulk
/// upgrade form of the addon `addon` and the last bulk upgrade's results.
#[server(prefix = "/sfn", endpoint = "fleet_addons")]
pub async fn fleet_addons_page(addon: Option<String>) -> Result<FleetAddonsDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    use crate::addons::dto::VersionCount;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let mut rows: Vec<kqueen_dto::addons::FleetAddon> = k
        .addons()
        .fleet(&actor)
        .await?
        .into_iter()
        .map(|(row, newer)| row.into_dto(newer))
        .collect();
    rows.sort_by(|a, b| (&a.addon, &a.tenant, &a.cluster).cmp(&(&b.addon, &b.tenant, &b.cluster)));
    let mut counts: Vec<VersionCount> = Vec::new();
    for r in &rows {
        match counts
            .iter_mut()
            .find(|c| c.addon == r.addon && c.version == r.version)
        {
            Some(c) => c.clusters += 1,
            None => counts.push(VersionCount {
                addon: r.addon.clone(),
                version: r.version.clone(),
                clusters: 1,
            }),
        }
    }
    let bars: Vec<(String, u64)> = counts
        .iter()
        .map(|c| (format!("{} {}", c.addon, c.version), c.clusters))
        .collect();
    let chart = kqueen_charts::figures::count_chart("Clusters by addon version", "Clusters", &bars);
    let can_bulk = check(&actor, Permission::ListAllTenants).is_ok();
    let (mut addons, mut versions, mut chosen) = (Vec::new(), Vec::new(), None);
    if can_bulk {
        let catalog = k.addons().catalog(&actor).await?;
        for d in &catalog {
            if addons.last() != Some(&d.name) {
                addons.push(d.name.clone());
            }
        }
        chosen = addon.filter(|a| addons.contains(a));
        if let Some(name) = &chosen {
            versions = catalog
                .iter()
                .filter(|d| &d.name == name)
                .map(|d| d.version.clone())
                .collect();
        }
    }
    Ok(FleetAddonsDto {
        rows,
        counts,
        chart,
        can_bulk,
        addons,
        chosen,
        versions,
        results: super::bulk::take().await,
        kept: crate::kept::take().await,
    })
}

/// The catalog, without manifests.
#[server(prefix = "/sfn", endpoint = "addon_catalog")]
pub async fn addon_catalog_page() -> Result<CatalogDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let definitions = k
        .addons()
        .catalog(&actor)
        .await?
        .into_iter()
        .map(|d| {
            let mut d: kqueen_dto::addons::AddonDefinition = d.into();
            d.manifests.clear();
            d
        })
        .collect();
    Ok(CatalogDto {
        definitions,
        can_manage: check(&actor, Permission::ManageCatalog).is_ok(),
        kept: crate::kept::take().await,
    })
}
