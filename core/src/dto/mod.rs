//! How the domain's types travel: the `kqueen_dto` types the REST API and the portal both
//! send, filled from the domain's own (`From` impls only: callers convert with `into`).
//! Audit, tenants, tokens, users and clusters here; addons, adoption and applications in
//! their own files.

mod addons;
mod adopt;
mod apps;

use kqueen_dto::{audit, clusters, tenants, tokens, users};

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

impl From<crate::provisioner::Capabilities> for clusters::Capabilities {
    fn from(c: crate::provisioner::Capabilities) -> Self {
        Self {
            scale: c.scale,
            upgrade: c.upgrade,
            deletes_infrastructure: c.deletes_infrastructure,
        }
    }
}

impl From<crate::cluster::Operation> for clusters::Operation {
    fn from(o: crate::cluster::Operation) -> Self {
        Self {
            id: o.id.to_string(),
            kind: o.kind.to_string(),
            state: o.state.to_string(),
            step: o.step,
            progress: o.progress,
            attempts: o.attempts,
            error: o.error,
            target: o.target.map(|t| t.to_string()),
            requested_by: o.requested_by,
            created_at: o.created_at.to_rfc3339(),
            started_at: o.started_at.map(|t| t.to_rfc3339()),
            finished_at: o.finished_at.map(|t| t.to_rfc3339()),
            deadline_at: o.deadline_at.to_rfc3339(),
        }
    }
}

impl From<crate::cluster::ClusterEvent> for clusters::Event {
    fn from(e: crate::cluster::ClusterEvent) -> Self {
        Self {
            id: e.id.to_string(),
            at: e.occurred_at.to_rfc3339(),
            kind: e.kind.to_string(),
            message: e.message,
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

impl From<crate::hosted::join::JoinInfo> for clusters::Join {
    fn from(j: crate::hosted::join::JoinInfo) -> Self {
        Self {
            endpoint: j.endpoint,
            token: j.token,
            token_id: j.token_id,
            expires_at: j.expires_at.to_rfc3339(),
            ca_cert_hash: j.ca_cert_hash,
            command: j.command,
        }
    }
}

impl From<crate::provisioner::SharedStorageReading> for clusters::SharedStorage {
    fn from(r: crate::provisioner::SharedStorageReading) -> Self {
        Self {
            keys: r.usage.keys,
            bytes: r.usage.bytes,
            writable: r.usage.writable,
            measured_at: r.measured_at.to_rfc3339(),
        }
    }
}

impl From<&crate::cluster::storage_quota::TenantStorage> for clusters::TenantStorage {
    fn from(t: &crate::cluster::storage_quota::TenantStorage) -> Self {
        Self {
            tenant: t.tenant.clone(),
            clusters: u32::try_from(t.clusters.len()).unwrap_or(u32::MAX),
            used_bytes: t.used(),
            quota_bytes: t.quota,
            writable: t.writable(),
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
