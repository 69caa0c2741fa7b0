//! Server functions: Tenants, their members and quotas. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::tenants::dto::QuotaDto;
use crate::tenants::dto::Tenant;
use crate::tenants::dto::TenantPageDto;
use crate::AppError;

/// Tenants the caller may see whose slug or name contains `q`, by slug.
#[server(prefix = "/sfn", endpoint = "tenants")]
pub async fn list_tenants(q: Option<String>) -> Result<Vec<Tenant>, AppError> {
    use kqueen_core::page::Page;
    use kqueen_core::tenant::TenantFilter;

    let filter = TenantFilter::from_query(q.as_deref());
    let tenants = crate::ssr::kqueen()?
        .tenancy()
        .list_tenants(&crate::ssr::actor(), &filter, Page::first(Page::MAX_LIMIT))
        .await?;
    Ok(tenants.into_iter().map(Into::into).collect())
}

/// A tenant with its members.
#[server(prefix = "/sfn", endpoint = "tenant")]
pub async fn tenant_page(slug: String) -> Result<TenantPageDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let tenant = k.tenancy().tenant(&actor, &slug).await?;
    let can_manage = check(&actor, Permission::ManageMembers(tenant.id)).is_ok();
    let members = k.tenancy().members(&actor, &slug).await?;
    Ok(TenantPageDto {
        tenant: tenant.into(),
        members: members.into_iter().map(Into::into).collect(),
        can_manage,
        kept: crate::kept::take().await,
    })
}

/// A tenant's quota and usage.
#[server(prefix = "/sfn", endpoint = "quota")]
pub async fn quota(tenant: String) -> Result<QuotaDto, AppError> {
    use kqueen_core::cluster::storage_quota::{format_size, size_input};
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let (q, u) = k.tenancy().quota(&actor, &tenant).await?;
    Ok(QuotaDto {
        shared_storage: format!(
            "{} of {}",
            format_size(u.shared_storage_bytes),
            q.max_shared_storage_bytes
                .map_or_else(|| "unlimited".to_owned(), format_size)
        ),
        shared_storage_input: q
            .max_shared_storage_bytes
            .map(size_input)
            .unwrap_or_default(),
        usage: q.with_usage(u),
        can_set: check(&actor, Permission::SetQuota).is_ok(),
    })
}
