//! How the domain's types travel: the `kqueen_dto` types the REST API and the portal both
//! send, filled from the domain's own (`From` impls only: callers convert with `into`).
//! Audit, tenants, tokens and users here; clusters, the catalog (kinds, providers,
//! templates), addons, adoption, applications, backups, approvals, rollouts, autoscaling and
//! cluster credentials in their own files.

mod addons;
mod adopt;
mod approvals;
mod apps;
mod autoscaling;
mod backups;
mod catalog;
mod clusters;
mod credentials;
mod rollouts;

use kqueen_dto::{audit, tenants, tokens, users};

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

/// The token as the API and the portal send it; `active` as of now.
impl From<crate::token::ApiToken> for tokens::Token {
    fn from(t: crate::token::ApiToken) -> Self {
        Self {
            active: t.is_active(crate::clock::now()),
            id: t.id.to_string(),
            name: t.name,
            prefix: t.prefix,
            created_at: t.created_at.to_rfc3339(),
            expires_at: t.expires_at.to_rfc3339(),
            last_used_at: t.last_used_at.map(|d| d.to_rfc3339()),
            revoked_at: t.revoked_at.map(|d| d.to_rfc3339()),
        }
    }
}

/// A user as the operators' list shows them.
impl From<crate::invite::UserSummary> for users::User {
    fn from(s: crate::invite::UserSummary) -> Self {
        let status = if s.user.disabled {
            "disabled"
        } else if s.pending {
            "waiting for first sign-in"
        } else if !s.local || s.has_password {
            "active"
        } else if s.invite_expires_at.is_some() {
            "invited"
        } else {
            "invite expired"
        };
        Self {
            source: if s.local { "local" } else { "sso" }.to_owned(),
            status: status.to_owned(),
            invite_expires_at: s.invite_expires_at.map(|t| t.to_rfc3339()),
            tenants: s
                .tenants
                .into_iter()
                .map(|(tenant, role)| users::UserTenant {
                    tenant,
                    role: role.to_string(),
                })
                .collect(),
            username: s.user.username,
            display_name: s.user.display_name,
            email: s.user.email,
            operator: s.user.is_operator,
            disabled: s.user.disabled,
            created_at: s.user.created_at.to_rfc3339(),
            last_login_at: s.user.last_login_at.map(|t| t.to_rfc3339()),
        }
    }
}

impl From<crate::cluster::Quota> for tenants::Quota {
    fn from(q: crate::cluster::Quota) -> Self {
        Self {
            max_clusters: q.max_clusters,
            max_nodes: q.max_nodes,
            cluster_ttl_hours: q.cluster_ttl_hours,
            max_shared_storage_bytes: q.max_shared_storage_bytes,
        }
    }
}

/// And back: the quota an operator sets through the API.
impl From<&tenants::Quota> for crate::cluster::Quota {
    fn from(q: &tenants::Quota) -> Self {
        Self {
            max_clusters: q.max_clusters,
            max_nodes: q.max_nodes,
            cluster_ttl_hours: q.cluster_ttl_hours,
            max_shared_storage_bytes: q.max_shared_storage_bytes,
        }
    }
}

impl crate::cluster::Quota {
    /// The quota as sent, with what the tenant uses against it.
    pub fn with_usage(self, u: crate::cluster::Usage) -> tenants::QuotaUsage {
        tenants::QuotaUsage {
            quota: self.into(),
            used_clusters: u.clusters,
            used_nodes: u.nodes,
            used_shared_storage_bytes: u.shared_storage_bytes,
        }
    }
}
