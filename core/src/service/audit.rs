//! Reading the audit trail: operators see everything, tenant admins their tenants' events.

use super::guard::Guard;
use super::tenants::Tenancy;
use crate::audit::{action, filter_text, time_bound, AuditEvent, AuditFilter, AuditQuery};
use crate::deps::Deps;
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::{Actor, Error, Result};

/// The audit trail, as each actor may read it.
#[derive(Clone)]
pub struct AuditLog {
    deps: Deps,
    guard: Guard,
    tenancy: Tenancy,
}

impl AuditLog {
    pub(super) fn new(deps: &Deps, guard: &Guard, tenancy: &Tenancy) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            tenancy: tenancy.clone(),
        }
    }
}

impl AuditLog {
    /// Turns typed-in filters into a query, resolving the tenant as the actor sees it (a tenant
    /// the actor may not view is "not found", and audited).
    pub async fn audit_query(&self, actor: &Actor, filter: &AuditFilter) -> Result<AuditQuery> {
        let tenant_id = match filter_text(filter.tenant.as_deref()) {
            Some(slug) => Some(self.tenancy.tenant(actor, &slug).await?.id),
            None => None,
        };
        let bound = |field, raw: &Option<String>, end| {
            filter_text(raw.as_deref())
                .map(|s| time_bound(field, &s, end))
                .transpose()
        };
        Ok(AuditQuery {
            tenant_id,
            within_tenants: None,
            actor: filter_text(filter.actor.as_deref()),
            action: filter_text(filter.action.as_deref()),
            since: bound("since", &filter.since, false)?,
            until: bound("until", &filter.until, true)?,
        })
    }

    /// Audit events matching `query`, newest first, within what the actor may see.
    pub async fn audit_events(
        &self,
        actor: &Actor,
        query: &AuditQuery,
        page: Page,
    ) -> Result<Vec<AuditEvent>> {
        if policy::check(actor, Permission::ViewAllAudit).is_ok() {
            return self.deps.store.list_audit(query, page).await;
        }
        let admin_of: Vec<uuid::Uuid> = actor
            .identity()
            .map(|i| i.admin_tenants().collect())
            .unwrap_or_default();
        if admin_of.is_empty() {
            let e = policy::check(actor, Permission::ViewAllAudit)
                .err()
                .unwrap_or(Error::Forbidden);
            self.guard
                .audit_refusal(actor, action::AUDIT_VIEW, "audit", None, &e)
                .await?;
            return Err(e);
        }
        if let Some(t) = query.tenant_id {
            self.guard
                .authorize(
                    actor,
                    Permission::ViewTenantAudit(t),
                    action::AUDIT_VIEW,
                    "audit",
                    Some(t),
                )
                .await?;
        }
        let scoped = AuditQuery {
            within_tenants: Some(admin_of),
            ..query.clone()
        };
        self.deps.store.list_audit(&scoped, page).await
    }
}
