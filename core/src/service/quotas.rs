//! Tenants' cluster quotas: what a tenant may use and what it uses.

use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::cluster::storage_quota::MAX_STORAGE_QUOTA;
use crate::cluster::{Quota, Usage};
use crate::policy::Permission;
use crate::tenant::TenantSlug;
use crate::{Actor, Error, Result, ValidationError};

impl Tenancy {
    /// A tenant's quota and what it uses (members of the tenant and operators).
    pub async fn quota(&self, actor: &Actor, tenant: &str) -> Result<(Quota, Usage)> {
        let t = self
            .visible_tenant(actor, tenant, action::TENANT_VIEW)
            .await?;
        Ok((
            self.deps.store.quota(t.id).await?,
            self.deps.store.usage(t.id).await?,
        ))
    }

    /// Sets a tenant's quota (operators).
    pub async fn set_quota(&self, actor: &Actor, tenant: &str, quota: Quota) -> Result<Quota> {
        self.guard
            .authorize(actor, Permission::SetQuota, action::QUOTA_SET, tenant, None)
            .await?;
        // A name in the path that no tenant can have names none.
        let slug = TenantSlug::parse(tenant).map_err(|_| Error::NotFound("tenant"))?;
        let t = self.deps.store.tenant_by_slug(&slug).await?;
        for (field, v, max) in [
            ("max_clusters", quota.max_clusters.map(u64::from), 100_000),
            ("max_nodes", quota.max_nodes.map(u64::from), 1_000_000),
            (
                "cluster_ttl_hours",
                quota.cluster_ttl_hours.map(u64::from),
                24 * 365 * 10,
            ),
            (
                "max_shared_storage_bytes",
                quota.max_shared_storage_bytes,
                MAX_STORAGE_QUOTA,
            ),
        ] {
            if v.is_some_and(|v| v == 0 || v > max) {
                let e: Error = ValidationError::new(
                    field,
                    format!("must be empty (unlimited) or between 1 and {max}"),
                )
                .into();
                self.guard
                    .audit_refusal(actor, action::QUOTA_SET, tenant, Some(t.id), &e)
                    .await?;
                return Err(e);
            }
        }
        let detail = format!(
            "max_clusters={:?} max_nodes={:?} cluster_ttl_hours={:?} max_shared_storage_bytes={:?}",
            quota.max_clusters,
            quota.max_nodes,
            quota.cluster_ttl_hours,
            quota.max_shared_storage_bytes
        );
        let audit = AuditEvent::success(actor, action::QUOTA_SET, t.slug.as_str())
            .in_tenant(t.id)
            .with_detail(detail);
        self.deps.store.set_quota(t.id, &quota, &audit).await?;
        Ok(quota)
    }
}
