//! Server functions of the cluster, provider and template pages.

use leptos::prelude::*;

use crate::clusters::dto::{ClusterPageDto, ClustersPageDto, NewClusterPageDto};

use crate::AppError;

/// Rows of one cluster list page.
pub const CLUSTER_PAGE_SIZE: u32 = 50;

#[cfg(feature = "ssr")]
pub(crate) mod map {
    use kqueen_core::cluster::{Cluster, ClusterState};
    use kqueen_core::provisioner::{ParamKind, ParamSchema};

    use crate::clusters::dto::{ClusterRowDto, ParamDto};
    use crate::ssr::time;

    pub fn params(schema: &ParamSchema) -> Vec<ParamDto> {
        schema
            .specs()
            .iter()
            .map(|s| {
                let (kind, min, max, options, max_len) = match &s.kind {
                    ParamKind::String { max_len, .. } => {
                        ("string", None, None, vec![], Some(*max_len))
                    }
                    ParamKind::Text { max_len } => ("text", None, None, vec![], Some(*max_len)),
                    ParamKind::Integer { min, max, .. } => ("integer", *min, *max, vec![], None),
                    ParamKind::Boolean { .. } => ("boolean", None, None, vec![], None),
                    ParamKind::Enum { options, .. } => ("enum", None, None, options.clone(), None),
                };
                ParamDto {
                    name: s.name.clone(),
                    label: s.label.clone(),
                    help: s.help.clone(),
                    required: s.required,
                    secret: s.secret,
                    kind: kind.into(),
                    default: s.default_text(),
                    min,
                    max,
                    options,
                    max_len,
                }
            })
            .collect()
    }

    pub fn row(c: Cluster) -> ClusterRowDto {
        ClusterRowDto {
            id: c.id.to_string(),
            tenant: c.tenant_slug,
            name: c.name.to_string(),
            template: c.template_name,
            kind: c.provider_kind.to_string(),
            state: c.state.to_string(),
            state_label: c.state.label().to_owned(),
            node_count: c.node_count,
            endpoint: c.endpoint,
            created: time(c.created_at),
            expires: c.expires_at.map(time),
        }
    }

    pub fn states() -> Vec<(String, String)> {
        ClusterState::ALL
            .iter()
            .map(|s| (s.as_str().to_owned(), s.label().to_owned()))
            .collect()
    }
}

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
        tenant: tenant.filter(|t| !t.is_empty()),
        state,
        name: name.filter(|n| !n.is_empty()),
    };
    let offset = offset.unwrap_or(0);
    let (clusters, total) = k
        .clusters()
        .list_clusters(&actor, &filter, Page::new(CLUSTER_PAGE_SIZE, offset))
        .await?;
    Ok(ClustersPageDto {
        clusters: clusters.into_iter().map(map::row).collect(),
        total,
        offset,
        limit: CLUSTER_PAGE_SIZE,
        tenants: crate::ssr::request_tenants(&k, &actor).await?,
        states: map::states(),
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

    use crate::clusters::dto::TemplateChoiceDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let tenants = crate::ssr::request_tenants(&k, &actor).await?;
    let tenant = tenant
        .filter(|t| !t.is_empty())
        .or_else(|| (tenants.len() == 1).then(|| tenants[0].clone()));
    let mut page = NewClusterPageDto {
        tenants,
        tenant: tenant.clone(),
        templates: vec![],
        template: None,
        params: vec![],
        fixed: vec![],
        quota: None,
        kept: crate::kept::take().await,
    };
    let Some(tenant) = tenant else {
        return Ok(page);
    };
    let choice = |v: &kqueen_core::TemplateView| TemplateChoiceDto {
        name: v.template.name.clone(),
        description: v.template.description.clone(),
        provider: v.provider_name.clone(),
        kind: v.provider_kind.to_string(),
    };
    let offered = k
        .catalog()
        .list_templates(&actor, Some(&tenant), Page::new(Page::MAX_LIMIT, 0))
        .await?;
    page.templates = offered.iter().map(choice).collect();
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
        .or_else(|| (offered.len() == 1).then(|| offered[0].template.name.clone()));
    if let Some(view) =
        chosen.and_then(|name| offered.into_iter().find(|v| v.template.name == name))
    {
        page.template = Some(choice(&view));
        page.params = map::params(&view.schema);
        page.fixed = view.fixed.into_iter().collect();
    }
    Ok(page)
}

/// A cluster with its operations and timeline.
#[server(prefix = "/sfn", endpoint = "cluster")]
pub async fn cluster_page(id: String) -> Result<ClusterPageDto, AppError> {
    use kqueen_core::cluster::OperationState;
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let d = k.clusters().cluster_detail(&actor, &id).await?;
    let busy = d
        .operations
        .first()
        .is_some_and(|o| matches!(o.state, OperationState::Pending | OperationState::Running));
    let can_manage = check(&actor, Permission::ManageClusters(d.cluster.tenant_id)).is_ok();
    let mut page = ClusterPageDto {
        shared_storage: d.shared_storage.map(Into::into),
        node_range: d.node_range,
        version_options: d.version_options.clone(),
        admin_access: (
            d.admin_access.as_str().to_owned(),
            d.admin_access.label().to_owned(),
        ),
        parameters: d.cluster.parameters.clone().into_iter().collect(),
        error: d.cluster.error.clone(),
        created_by: d.cluster.created_by.clone(),
        cluster: map::row(d.cluster),
        capabilities: kqueen_dto::clusters::Capabilities::from(d.capabilities),
        operations: d.operations.into_iter().map(Into::into).collect(),
        events: d.events.into_iter().map(Into::into).collect(),
        busy,
        admin_kubeconfig: d.admin_kubeconfig,
        can_manage,
        inventory: None,
    };
    page.inventory = crate::fleet::sfn::cluster_inventory(
        &k,
        &actor,
        &page.cluster.id,
        page.cluster.state == "ready",
    )
    .await?;
    Ok(page)
}
