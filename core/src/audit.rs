//! The portal's audit trail: who did what, to what, in which tenant, with which result.

use chrono::{DateTime, Utc};
use std::fmt;
use uuid::Uuid;

use crate::Actor;

/// How an audited action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Refused by authorization.
    Denied,
    /// Attempted and failed (invalid input, conflict, error).
    Failure,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Denied => "denied",
            Outcome::Failure => "failure",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "success" => Some(Outcome::Success),
            "denied" => Some(Outcome::Denied),
            "failure" => Some(Outcome::Failure),
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Names of audited actions, `<object>.<verb>`.
pub mod action {
    pub const TENANT_CREATE: &str = "tenant.create";
    pub const TENANT_VIEW: &str = "tenant.view";
    pub const TENANT_LIST: &str = "tenant.list";
    pub const MEMBER_PUT: &str = "member.put";
    pub const MEMBER_REMOVE: &str = "member.remove";
    pub const MEMBER_LIST: &str = "member.list";
    pub const USER_CREATE: &str = "user.create";
    pub const USER_LIST: &str = "user.list";
    /// A new set-password link for a local account that has no password yet.
    pub const USER_INVITE: &str = "user.invite";
    /// The invited person set their password with the link.
    pub const USER_INVITE_ACCEPT: &str = "user.invite.accept";
    pub const LOGIN: &str = "auth.login";
    pub const LOGOUT: &str = "auth.logout";
    pub const TOKEN_CREATE: &str = "token.create";
    pub const TOKEN_REVOKE: &str = "token.revoke";
    pub const TOKEN_LIST: &str = "token.list";
    pub const AUDIT_VIEW: &str = "audit.view";
    pub const SELF_VIEW: &str = "self.view";
    pub const PROVIDER_CREATE: &str = "provider.create";
    pub const PROVIDER_UPDATE: &str = "provider.update";
    pub const PROVIDER_DELETE: &str = "provider.delete";
    pub const PROVIDER_VIEW: &str = "provider.view";
    pub const TEMPLATE_CREATE: &str = "template.create";
    pub const TEMPLATE_UPDATE: &str = "template.update";
    pub const TEMPLATE_DELETE: &str = "template.delete";
    pub const TEMPLATE_VIEW: &str = "template.view";
    pub const QUOTA_SET: &str = "quota.set";
    pub const CLUSTER_CREATE: &str = "cluster.create";
    pub const CLUSTER_VIEW: &str = "cluster.view";
    pub const CLUSTER_LIST: &str = "cluster.list";
    pub const CLUSTER_DELETE: &str = "cluster.delete";
    pub const CLUSTER_SCALE: &str = "cluster.scale";
    pub const CLUSTER_UPGRADE: &str = "cluster.upgrade";
    /// The machine of a dead (NotReady) node replaced by the cluster's provisioner.
    pub const CLUSTER_REPLACE_NODE: &str = "cluster.replace_node";
    /// An operator took an existing cluster (a Cluster API Cluster) into a tenant.
    pub const CLUSTER_ADOPT: &str = "cluster.adopt";
    /// An operator listed the clusters a provider's infrastructure holds.
    pub const CLUSTER_DISCOVER: &str = "cluster.discover";
    pub const CLUSTER_EXPIRE: &str = "cluster.expire";
    /// A node join token handed out (hosted clusters), or revoked.
    pub const CLUSTER_JOIN: &str = "cluster.join";
    pub const CLUSTER_JOIN_REVOKE: &str = "cluster.join.revoke";
    pub const KUBECONFIG_ADMIN: &str = "kubeconfig.admin";
    pub const KUBECONFIG_ISSUE: &str = "kubeconfig.issue";
    pub const ACCESS_REVOKE: &str = "access.revoke";
    /// The access sweep changed users' bindings in a cluster (new namespaces, migration).
    pub const ACCESS_SYNC: &str = "access.sync";
    pub const INVENTORY_SYNC: &str = "inventory.sync";
    /// The cluster lost write access to its shared storage (its tenant is over its storage
    /// quota), or got it back; by `system`, at the end of an inventory round.
    pub const CLUSTER_STORAGE_READ_ONLY: &str = "cluster.storage.read_only";
    pub const CLUSTER_STORAGE_WRITABLE: &str = "cluster.storage.writable";
    pub const FLEET_VIEW: &str = "fleet.view";
    /// An application version deployed (or re-deployed), or removed; a dry run is not
    /// recorded (it changes nothing).
    pub const APP_DEPLOY: &str = "app.deploy";
    pub const APP_DELETE: &str = "app.delete";
    pub const APP_VIEW: &str = "app.view";
    /// A backup of a cluster asked for; its archive downloaded (who downloaded which).
    pub const BACKUP_CREATE: &str = "backup.create";
    pub const BACKUP_VIEW: &str = "backup.view";
    pub const BACKUP_DOWNLOAD: &str = "backup.download";
    /// A backup removed by hand, or by its schedule's retention.
    pub const BACKUP_DELETE: &str = "backup.delete";
    /// A cluster's backup schedule set or removed.
    pub const BACKUP_SCHEDULE: &str = "backup.schedule";
    /// A backup restored (or its plan asked for) into a cluster.
    pub const BACKUP_RESTORE: &str = "backup.restore";
    /// A cluster marked production, or the mark taken off (once approved).
    pub const CLUSTER_PRODUCTION: &str = "cluster.production";
    /// A second person's approval asked for (delete, restore over, unmark a production
    /// cluster).
    pub const APPROVAL_REQUEST: &str = "approval.request";
    /// A request approved (its action then runs, audited with both names).
    pub const APPROVAL_APPROVE: &str = "approval.approve";
    /// A request refused by a second person, or withdrawn by the one who asked.
    pub const APPROVAL_REFUSE: &str = "approval.refuse";
    /// Requests listed or viewed.
    pub const APPROVAL_VIEW: &str = "approval.view";
    /// A rollout (upgrade in waves) planned, started, paused, resumed, aborted; viewed.
    pub const ROLLOUT_PLAN: &str = "rollout.plan";
    pub const ROLLOUT_START: &str = "rollout.start";
    pub const ROLLOUT_PAUSE: &str = "rollout.pause";
    pub const ROLLOUT_RESUME: &str = "rollout.resume";
    pub const ROLLOUT_ABORT: &str = "rollout.abort";
    /// A rollout's last wave ended (recorded by the system).
    pub const ROLLOUT_COMPLETE: &str = "rollout.complete";
    pub const ROLLOUT_VIEW: &str = "rollout.view";
    /// A cluster's autoscaling turned on, changed or turned off; viewed.
    pub const AUTOSCALE_SET: &str = "autoscale.set";
    pub const AUTOSCALE_VIEW: &str = "autoscale.view";
    /// An addon installed, moved to another version or parameters, or removed.
    pub const ADDON_INSTALL: &str = "addon.install";
    pub const ADDON_UPGRADE: &str = "addon.upgrade";
    pub const ADDON_REMOVE: &str = "addon.remove";
    pub const ADDON_VIEW: &str = "addon.view";
    /// An addon version added to or removed from the catalog (operators).
    pub const ADDON_DEFINE: &str = "addon.define";
    pub const ADDON_UNDEFINE: &str = "addon.undefine";
}

/// One entry of the audit trail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    pub id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub actor: String,
    pub tenant_id: Option<Uuid>,
    pub action: String,
    pub target: String,
    pub outcome: Outcome,
    pub source_ip: Option<String>,
    /// A short, secret-free explanation (the reason of a failure, say).
    pub detail: Option<String>,
    /// The slug of `tenant_id`, filled when read back (None for deleted tenants).
    pub tenant_slug: Option<String>,
}

impl AuditEvent {
    /// A new event happening now. Ids are UUIDv7, so they sort by time as well.
    pub fn now(actor: &Actor, action: &str, target: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            id: Uuid::now_v7(),
            occurred_at: crate::clock::now(),
            actor: actor.to_string(),
            tenant_id: None,
            action: action.to_owned(),
            target: target.into(),
            outcome,
            source_ip: actor.source_ip.clone(),
            detail: None,
            tenant_slug: None,
        }
    }

    /// A successful `action` on `target` by `actor`, now.
    pub fn success(actor: &Actor, action: &str, target: impl Into<String>) -> Self {
        Self::now(actor, action, target, Outcome::Success)
    }

    pub fn in_tenant(mut self, tenant_id: Uuid) -> Self {
        self.tenant_id = Some(tenant_id);
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// Audit filters as people type them (forms, query strings): blank fields filter nothing;
/// [`crate::Kqueen::audit_query`] turns them into an [`AuditQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Tenant slug.
    pub tenant: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    /// `YYYY-MM-DD` (UTC) or an RFC 3339 time.
    pub since: Option<String>,
    /// `YYYY-MM-DD` (UTC, that whole day included) or an RFC 3339 time.
    pub until: Option<String>,
}

/// A filter field, trimmed and cut to 100 characters; `None` when blank.
pub(crate) fn filter_text(v: Option<&str>) -> Option<String> {
    v.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(100).collect())
}

/// Parses a time bound: an RFC 3339 time, or a `YYYY-MM-DD` day (UTC) meaning its start, or
/// with `end_of_day` the start of the next day (so that the day is included).
pub fn time_bound(
    field: &'static str,
    raw: &str,
    end_of_day: bool,
) -> Result<DateTime<Utc>, crate::ValidationError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.with_timezone(&Utc));
    }
    let day = chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d").map_err(|_| {
        crate::ValidationError::new(field, "must be a date (YYYY-MM-DD) or an RFC 3339 time")
    })?;
    let day = if end_of_day {
        day + chrono::Duration::days(1)
    } else {
        day
    };
    Ok(day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
}

/// Filter of the audit list; every field narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub tenant_id: Option<Uuid>,
    /// Only events of these tenants (how tenant admins are limited to their tenants).
    pub within_tenants: Option<Vec<Uuid>>,
    /// Exact actor name.
    pub actor: Option<String>,
    /// Exact action, or a prefix ending in `.` (`member.` matches `member.put`).
    pub action: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds() {
        let d = time_bound("until", "2026-11-21", true).expect("a day");
        assert_eq!(d.to_rfc3339(), "2026-11-22T00:00:00+00:00");
        let d = time_bound("since", "2026-11-21", false).expect("a day");
        assert_eq!(d.to_rfc3339(), "2026-11-21T00:00:00+00:00");
        assert!(time_bound("since", "2026-11-21T10:00:00Z", false).is_ok());
        let e = time_bound("since", "yesterday", false).expect_err("not a time");
        assert_eq!(e.field, "since");
        assert!(e.message.contains("must be a date"));
    }

    #[test]
    fn filter_text_trims_and_bounds() {
        assert_eq!(filter_text(None), None);
        assert_eq!(filter_text(Some("  ")), None);
        assert_eq!(filter_text(Some(" x ")).as_deref(), Some("x"));
        assert_eq!(
            filter_text(Some(&"y".repeat(300))).map(|s| s.len()),
            Some(100)
        );
    }
}

/// One audit event as a line of the CSV export.
#[derive(serde::Serialize)]
struct AuditLine<'a> {
    time: String,
    actor: &'a str,
    tenant: Option<&'a str>,
    action: &'a str,
    target: &'a str,
    result: &'a str,
    source_ip: Option<&'a str>,
    detail: Option<&'a str>,
}

/// The CSV export of audit events.
pub fn audit_csv(events: &[AuditEvent]) -> crate::Result<String> {
    let lines = events.iter().map(|e| AuditLine {
        time: e.occurred_at.to_rfc3339(),
        actor: &e.actor,
        tenant: e.tenant_slug.as_deref(),
        action: &e.action,
        target: &e.target,
        result: e.outcome.as_str(),
        source_ip: e.source_ip.as_deref(),
        detail: e.detail.as_deref(),
    });
    crate::export::to_csv(
        &[
            "time",
            "actor",
            "tenant",
            "action",
            "target",
            "result",
            "source_ip",
            "detail",
        ],
        lines,
    )
}
