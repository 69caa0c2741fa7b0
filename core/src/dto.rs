//! How the domain's types travel: the `kqueen_dto` types the REST API and the portal both
//! send, filled from the domain's own.

use kqueen_dto::{audit, tenants};

/// The audit entry as the API and the portal send it.
impl From<crate::audit::AuditEvent> for audit::AuditEvent {
    fn from(e: crate::audit::AuditEvent) -> Self {
        Self {
            id: e.id.to_string(),
            time: e.occurred_at.to_rfc3339(),
            actor: e.actor,
            tenant: e.tenant_slug,
            action: e.action,
            target: e.target,
            result: e.outcome.as_str().to_owned(),
            source_ip: e.source_ip,
            detail: e.detail,
        }
    }
}

impl From<crate::tenant::Tenant> for tenants::Tenant {
    fn from(t: crate::tenant::Tenant) -> Self {
        Self {
            slug: t.slug.to_string(),
            display_name: t.display_name.as_str().to_owned(),
            created_at: t.created_at.to_rfc3339(),
        }
    }
}

impl From<crate::identity::Member> for tenants::Member {
    fn from(m: crate::identity::Member) -> Self {
        Self {
            username: m.username,
            email: m.email,
            role: m.role.to_string(),
            source: m.source.as_str().to_owned(),
        }
    }
}
