//! Requests for approval as the REST API and the portal send them.

use kqueen_dto::approvals;

impl crate::approval::Approval {
    /// The request as sent, its state as of `now` (a pending request past its time is
    /// expired).
    pub fn into_dto_at(self, now: chrono::DateTime<chrono::Utc>) -> approvals::Approval {
        let state = self.state_at(now).to_string();
        let (backup, namespaces) = match self.restore {
            Some(r) => (Some(r.backup_id.to_string()), r.namespaces),
            None => (None, Vec::new()),
        };
        approvals::Approval {
            id: self.id.to_string(),
            cluster_id: self.cluster_id.to_string(),
            cluster: self.cluster_name,
            action: self.action.to_string(),
            backup,
            namespaces,
            reason: self.reason,
            requested_by: self.requested_by,
            requested_at: self.requested_at.to_rfc3339(),
            expires_at: self.expires_at.to_rfc3339(),
            state,
            decided_by: self.decided_by,
            decided_at: self.decided_at.map(|t| t.to_rfc3339()),
            note: self.note,
            operation: self.operation_id.map(|id| id.to_string()),
        }
    }
}

impl From<crate::approval::Approval> for approvals::Approval {
    fn from(a: crate::approval::Approval) -> Self {
        a.into_dto_at(crate::clock::now())
    }
}

impl From<&approvals::ApprovalRequest> for crate::service::ApprovalInput {
    fn from(r: &approvals::ApprovalRequest) -> Self {
        Self {
            action: r.action.clone(),
            backup: r.backup.clone(),
            namespaces: r.namespaces.clone(),
            reason: r.reason.clone(),
        }
    }
}
