//! The admin and tenant pages' writes (tenants, members, quotas), as server functions behind
//! `ActionForm`: they post and redirect without JavaScript, and run in place with it.

use leptos::prelude::*;

use crate::AppError;

/// The tenant page of `slug`, for redirects.
#[cfg(feature = "ssr")]
fn tenant_page(slug: &str) -> String {
    format!("/tenants/{}", crate::query::form_escape(slug))
}

/// Creates a tenant (operators) and opens its page.
#[server(prefix = "/sfn", endpoint = "create_tenant")]
pub async fn create_tenant(slug: String, display_name: Option<String>) -> Result<(), AppError> {
    use kqueen_core::tenant::NewTenant;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let values = [
        ("slug".to_owned(), slug.clone()),
        (
            "display_name".to_owned(),
            display_name.clone().unwrap_or_default(),
        ),
    ]
    .into();
    let input = NewTenant { slug, display_name };
    match k.tenancy().create_tenant(&actor, input).await {
        Ok(t) => leptos_axum::redirect(&tenant_page(t.slug.as_str())),
        Err(e) => crate::kept::refused("/admin", "create-tenant", values, e).await,
    }
    Ok(())
}

/// Adds a member to `tenant`, or changes their role.
#[server(prefix = "/sfn", endpoint = "put_member")]
pub async fn put_member(
    tenant: String,
    username: String,
    role: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::identity::Role;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let values = [
        ("username".to_owned(), username.clone()),
        ("role".to_owned(), role.clone().unwrap_or_default()),
    ]
    .into();
    let result = match Role::parse(role.as_deref().unwrap_or("member")) {
        Ok(role) => {
            k.tenancy()
                .put_member(&actor, &tenant, username.trim(), role)
                .await
        }
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => crate::ssr::back(&tenant_page(&tenant), Ok(())),
        Err(e) => crate::kept::refused(&tenant_page(&tenant), "add-member", values, e).await,
    }
    Ok(())
}

/// Removes a member from `tenant`.
#[server(prefix = "/sfn", endpoint = "remove_member")]
pub async fn remove_member(tenant: String, username: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .tenancy()
        .remove_member(&actor, &tenant, username.trim())
        .await;
    crate::ssr::back(&tenant_page(&tenant), result);
    Ok(())
}

/// Sets `tenant`'s cluster quota (operators); an empty field means unlimited. The shared
/// etcd quota is a size (`512 MiB`, `2 GiB`; a plain number is MiB).
#[server(prefix = "/sfn", endpoint = "set_quota")]
pub async fn set_quota(
    tenant: String,
    max_clusters: Option<String>,
    max_nodes: Option<String>,
    cluster_ttl_hours: Option<String>,
    max_shared_storage: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::cluster::storage_quota::parse_size;
    use kqueen_core::cluster::Quota;
    use kqueen_core::{Error, ValidationError};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let number = |name: &'static str, v: &Option<String>| -> Result<Option<u32>, Error> {
        let v = v.as_deref().unwrap_or_default().trim();
        if v.is_empty() {
            return Ok(None);
        }
        v.parse()
            .map(Some)
            .map_err(|_| ValidationError::new(name, "must be a whole number or empty").into())
    };
    let quota = (|| {
        Ok::<_, Error>(Quota {
            max_clusters: number("max_clusters", &max_clusters)?,
            max_nodes: number("max_nodes", &max_nodes)?,
            cluster_ttl_hours: number("cluster_ttl_hours", &cluster_ttl_hours)?,
            max_shared_storage_bytes: match max_shared_storage.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(size) => Some(
                    parse_size(size).map_err(|m| ValidationError::new("max_shared_storage", m))?,
                ),
            },
        })
    })();
    let result = match quota {
        Ok(q) => k.tenancy().set_quota(&actor, &tenant, q).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => crate::ssr::back(&tenant_page(&tenant), Ok(())),
        Err(e) => {
            let values = [
                ("max_clusters", max_clusters),
                ("max_nodes", max_nodes),
                ("cluster_ttl_hours", cluster_ttl_hours),
                ("max_shared_storage", max_shared_storage),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.unwrap_or_default()))
            .collect();
            crate::kept::refused(&tenant_page(&tenant), "quota-form", values, e).await;
        }
    }
    Ok(())
}
