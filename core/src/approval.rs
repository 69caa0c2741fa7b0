//! Two-person approval of what cannot be undone on a production cluster: deleting it,
//! restoring a backup over it, and taking its production mark off. One person asks; a second
//! operator or tenant admin of the cluster's tenant approves (the action then runs) or refuses;
//! the one who asked may withdraw; a request not decided in time expires. The use cases are in
//! `service/approvals.rs`.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::identity::Identity;
use crate::{Error, Result, ValidationError};

/// How long a request waits for its second person.
pub const APPROVAL_HOURS: i64 = 24;

/// The longest reason a request or a refusal may give.
pub const REASON_CHARS: usize = 500;

crate::cluster::string_enum!(
    /// What a request asks to do to a production cluster.
    ApprovalAction {
        Delete = "delete",
        /// Restore a backup into the cluster (over what it holds).
        Restore = "restore",
        /// Take the production mark off.
        Unprotect = "unprotect",
    }
);

impl ApprovalAction {
    /// Words for the timeline and the pages: "delete the cluster".
    pub fn words(self) -> &'static str {
        match self {
            Self::Delete => "delete the cluster",
            Self::Restore => "restore a backup into the cluster",
            Self::Unprotect => "take the production mark off",
        }
    }
}

crate::cluster::string_enum!(
    /// Where a request is.
    ApprovalState {
        Pending = "pending",
        /// Approved by a second person; the action ran (queued its operation).
        Approved = "approved",
        /// Approved, but the action could not run (the note says why).
        Failed = "failed",
        Refused = "refused",
        /// Taken back by the one who asked.
        Withdrawn = "withdrawn",
        /// Nobody decided in time (never stored: a pending request past its time).
        Expired = "expired",
    }
);

/// What a restore request restores: the backup, and only these namespaces (empty: all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreDetail {
    pub backup_id: Uuid,
    #[serde(default)]
    pub namespaces: Vec<String>,
}

/// A request for a second person's approval.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub cluster_id: Uuid,
    pub cluster_name: String,
    pub action: ApprovalAction,
    /// For [`ApprovalAction::Restore`].
    pub restore: Option<RestoreDetail>,
    /// Why the requester wants it (may be empty).
    pub reason: String,
    pub requested_by: String,
    pub requested_by_id: Uuid,
    pub requested_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// As stored: `Pending` past `expires_at` is read as expired by [`Approval::state_at`].
    pub state: ApprovalState,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    /// Why it was refused, or why the approved action could not run.
    pub note: Option<String>,
    /// The operation the approved action queued.
    pub operation_id: Option<Uuid>,
}

impl Approval {
    /// A new pending request by `who`, expiring [`APPROVAL_HOURS`] after `now`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tenant_id: Uuid,
        cluster_id: Uuid,
        cluster_name: &str,
        action: ApprovalAction,
        restore: Option<RestoreDetail>,
        reason: &str,
        who: &Identity,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            tenant_id,
            cluster_id,
            cluster_name: cluster_name.to_owned(),
            action,
            restore,
            reason: reason.to_owned(),
            requested_by: who.username.clone(),
            requested_by_id: who.user_id,
            requested_at: now,
            expires_at: now + Duration::hours(APPROVAL_HOURS),
            state: ApprovalState::Pending,
            decided_by: None,
            decided_at: None,
            note: None,
            operation_id: None,
        }
    }

    /// The state as of `now`: a pending request past its time is expired.
    pub fn state_at(&self, now: DateTime<Utc>) -> ApprovalState {
        if self.state == ApprovalState::Pending && now >= self.expires_at {
            ApprovalState::Expired
        } else {
            self.state
        }
    }

    /// Whether `who` may decide the request at `now` as its second person: it must be
    /// pending, and `who` not the one who asked. (Whether `who` is an operator or an admin of
    /// the tenant is the policy's to say.)
    pub fn check_approver(&self, who: &Identity, now: DateTime<Utc>) -> Result<()> {
        self.check_pending(now)?;
        if who.user_id == self.requested_by_id {
            return Err(Error::Refused(format!(
                "you asked for this: a second operator or tenant admin must approve it ({} \
                 cannot approve their own request)",
                self.requested_by
            )));
        }
        Ok(())
    }

    /// Refuses unless the request can still be decided at `now`.
    pub fn check_pending(&self, now: DateTime<Utc>) -> Result<()> {
        match self.state_at(now) {
            ApprovalState::Pending => Ok(()),
            ApprovalState::Expired => Err(Error::Conflict(format!(
                "the request expired at {}; ask again",
                self.expires_at.format("%Y-%m-%d %H:%M UTC")
            ))),
            s => Err(Error::Conflict(format!("the request is {s} already"))),
        }
    }
}

/// A reason as typed: trimmed, at most [`REASON_CHARS`] characters, no control characters.
pub fn reason(field: &'static str, text: Option<&str>) -> Result<String> {
    let text = text.unwrap_or("").trim();
    if text.chars().count() > REASON_CHARS {
        return Err(ValidationError::new(
            field,
            format!("must be at most {REASON_CHARS} characters"),
        )
        .into());
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(ValidationError::new(field, "must not hold control characters").into());
    }
    Ok(text.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn person(name: &str) -> Identity {
        Identity {
            user_id: Uuid::now_v7(),
            username: name.into(),
            email: None,
            display_name: None,
            is_operator: false,
            memberships: Vec::new(),
        }
    }

    fn request(by: &Identity, now: DateTime<Utc>) -> Approval {
        Approval::new(
            Uuid::now_v7(),
            Uuid::now_v7(),
            "prod",
            ApprovalAction::Delete,
            None,
            "",
            by,
            now,
        )
    }

    #[test]
    fn the_requester_cannot_approve_but_a_second_person_can() {
        let now = Utc::now();
        let (alice, bob) = (person("alice"), person("bob"));
        let a = request(&alice, now);
        let err = a.check_approver(&alice, now).unwrap_err();
        assert!(
            matches!(err, Error::Refused(ref m) if m.contains("second")),
            "{err}"
        );
        a.check_approver(&bob, now).expect("bob approves");
    }

    #[test]
    fn a_request_expires_and_a_decided_one_stays_decided() {
        let now = Utc::now();
        let (alice, bob) = (person("alice"), person("bob"));
        let mut a = request(&alice, now);
        let later = now + Duration::hours(APPROVAL_HOURS);
        assert_eq!(
            a.state_at(later - Duration::seconds(1)),
            ApprovalState::Pending
        );
        assert_eq!(a.state_at(later), ApprovalState::Expired);
        let err = a.check_approver(&bob, later).unwrap_err();
        assert!(err.to_string().contains("expired"), "{err}");
        a.state = ApprovalState::Refused;
        assert_eq!(a.state_at(later), ApprovalState::Refused);
        let err = a.check_approver(&bob, now).unwrap_err();
        assert!(err.to_string().contains("refused already"), "{err}");
    }

    #[test]
    fn reasons_are_bounded_and_printable() {
        assert_eq!(reason("reason", Some("  rollback ")).unwrap(), "rollback");
        assert_eq!(reason("reason", None).unwrap(), "");
        assert!(reason("reason", Some(&"x".repeat(REASON_CHARS + 1))).is_err());
        assert!(reason("reason", Some("a\u{7}b")).is_err());
        assert!(reason("reason", Some("line\nnext")).is_ok());
    }
}
