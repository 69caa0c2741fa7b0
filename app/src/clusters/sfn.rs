//! Server functions of the cluster, provider and template pages.

use leptos::prelude::*;

use crate::clusters::dto::{ClusterPageDto, ClustersPageDto, NewClusterPageDto};

use crate::AppError;

/// One page of the clusters the caller may see.
#[server(prefix = "/sfn", endpoint = "clusters")]
pub async fn clusters_page(
    tenant: Option<String>,
    state: Option<String>,
    name: Option<String>,
    offset: Option<u32>,
) -> Result<ClustersPageDto, AppError> {
    use kqueen_core::cluster::{ClusterFilter, ClusterState};
    use kqueen_core::page::Page;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let state = match state.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(
            ClusterState::parse(s)
                .ok_or_else(|| AppError::Invalid(format!("unknown state '{s}'")))?,
        ),
        None => None,
    };
    let filter = ClusterFilter {
        tenant: tenant
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty()),
        state,
        name: name.filter(|n| !n.is_empty()),
    };
    let offset = offset.unwrap_or(0);
    let (clusters, total) = k
        .clusters()
        .list_clusters(&actor, &filter, Page::new(Page::DEFAULT_LIMIT, offset))
        .await?;
    Ok(ClustersPageDto {
        clusters: clusters.into_iter().map(Into::into).collect(),
        total,
        offset,
        limit: Page::DEFAULT_LIMIT,
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
    })
}

/// The request form: tenants, the templates offered to the chosen tenant, and the chosen
/// template's parameters.
#[server(prefix = "/sfn", endpoint = "new_cluster")]
pub async fn new_cluster_page(
    tenant: Option<String>,
    template: Option<String>,
) -> Result<NewClusterPageDto, AppError> {
    use kqueen_core::page::Page;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let tenants = crate::ssr::filter_tenants(&k, &actor).await?;
    let only = match tenants.as_deref() {
        Some([only]) => Some(only.clone()),
        _ => None,
    };
    let tenant = tenant
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .or(only);
    let mut page = NewClusterPageDto {
        tenants,
        tenant: tenant.clone(),
        tenant_error: None,
        templates: vec![],
        template: None,
        quota: None,
        kept: crate::kept::take().await,
    };
    let Some(tenant) = tenant else {
        return Ok(page);
    };
    // A typed slug may name no tenant the caller sees: said at the field, the form stays.
    let offered = match k
        .catalog()
        .list_templates(&actor, Some(&tenant), Page::new(Page::MAX_LIMIT, 0))
        .await
    {
        Err(kqueen_core::Error::NotFound(_)) => {
            page.tenant_error = Some(format!("You have no tenant named “{tenant}”."));
            return Ok(page);
        }
        other => other?,
    };
    page.templates = offered.into_iter().map(Into::into).collect();
    let (q, u) = k.tenancy().quota(&actor, &tenant).await?;
    let limit = |v: Option<u32>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    page.quota = Some(format!(
        "{} of {} clusters, {} of {} nodes in use{}",
        u.clusters,
        limit(q.max_clusters),
        u.nodes,
        limit(q.max_nodes),
        q.cluster_ttl_hours
            .map(|h| format!("; clusters are deleted {h} h after creation"))
            .unwrap_or_default()
    ));
    let chosen = template
        .filter(|t| !t.is_empty())
        .or_else(|| (page.templates.len() == 1).then(|| page.templates[0].name.clone()));
    page.template = chosen.and_then(|name| page.templates.iter().find(|t| t.name == name).cloned());
    Ok(page)
}

/// A cluster with its operations and timeline.
#[server(prefix = "/sfn", endpoint = "cluster")]
pub async fn cluster_page(id: String) -> Result<ClusterPageDto, AppError> {
    use kqueen_core::cluster::{ClusterState, OperationState};
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let d = k.clusters().cluster_detail(&actor, &id).await?;
    let busy = d
        .operations
        .first()
        .is_some_and(|o| matches!(o.state, OperationState::Pending | OperationState::Running));
    let can_manage = check(&actor, Permission::ManageClusters(d.cluster.tenant_id)).is_ok();
    let approvals = crate::approvals::sfn::cluster_approvals(&k, &actor, &d.cluster).await?;
    let can_replace_nodes = d.capabilities.replace_node
        && d.cluster.state == ClusterState::Ready
        && check(&actor, Permission::ReplaceNodes(d.cluster.tenant_id)).is_ok();
    let page = ClusterPageDto {
        approvals,
        node_range: d.node_range,
        version_options: d.version_options.clone(),
        admin_access_label: d.admin_access.label().to_owned(),
        busy,
        admin_kubeconfig: d.admin_kubeconfig,
        can_manage,
        can_back_up: check(&actor, Permission::ManageBackups(d.cluster.tenant_id)).is_ok(),
        can_replace_nodes,
        inventory: crate::fleet::sfn::cluster_inventory(
            &k,
            &actor,
            &d.cluster.id.to_string(),
            d.cluster.state == ClusterState::Ready,
        )
        .await?,
        detail: d.into(),
        public_url: crate::context::get::<crate::users::PublicUrl>()
            .map(|u| u.0.trim_end_matches('/').to_owned())
            .unwrap_or_default(),
    };
    Ok(page)
}
