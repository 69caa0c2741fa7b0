//! Server functions: Tenants, their members and quotas. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::tenants::dto::QuotaDto;
use crate::tenants::dto::TenantDto;
use crate::tenants::dto::TenantPageDto;
use crate::AppError;

/// Tenants the caller may see whose slug or name contains `q`, by slug.
#[server(prefix = "/sfn", endpoint = "tenants")]
pub async fn list_tenants(q: Option<String>) -> Result<Vec<TenantDto>, AppError> {
    use kqueen_core::page::Page;
    use kqueen_core::tenant::TenantFilter;

    let filter = TenantFilter::from_query(q.as_deref());
    let tenants = crate::ssr::kqueen()?
        .list_tenants(&crate::ssr::actor(), &filter, Page::first(Page::MAX_LIMIT))
        .await?;
    Ok(tenants.into_iter().map(tenant_dto).collect())
}

/// A tenant with its members.
#[server(prefix = "/sfn", endpoint = "tenant")]
pub async fn tenant_page(slug: String) -> Result<TenantPageDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let tenant = k.tenant(&actor, &slug).await?;
    let can_manage = check(&actor, Permission::ManageMembers(tenant.id)).is_ok();
    let members = k.members(&actor, &slug).await?;
    Ok(TenantPageDto {
        tenant: tenant_dto(tenant),
        members: members
            .into_iter()
            .map(|m| crate::tenants::dto::MemberDto {
                username: m.username,
                email: m.email,
                role: m.role.to_string(),
                source: m.source.as_str().to_owned(),
            })
            .collect(),
        can_manage,
    })
}

/// A tenant's quota and usage.
#[server(prefix = "/sfn", endpoint = "quota")]
pub async fn quota(tenant: String) -> Result<QuotaDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let (q, u) = k.quota(&actor, &tenant).await?;
    Ok(QuotaDto {
        max_clusters: q.max_clusters,
        max_nodes: q.max_nodes,
        cluster_ttl_hours: q.cluster_ttl_hours,
        used_clusters: u.clusters,
        used_nodes: u.nodes,
        can_set: check(&actor, Permission::SetQuota).is_ok(),
    })
}

#[cfg(feature = "ssr")]
fn tenant_dto(t: kqueen_core::tenant::Tenant) -> TenantDto {
    TenantDto {
        slug: t.slug.to_string(),
        display_name: t.display_name.as_str().to_owned(),
        created: t.created_at.format("%Y-%m-%d %H:%M").to_string(),
    }
}
