//! Production marks on clusters and requests for a second person's approval.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::clusters::LIVE_CLUSTER_ID;
use super::operations::insert_events;
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::approval::{Approval, ApprovalAction, ApprovalState, RestoreDetail};
use crate::audit::AuditEvent;
use crate::cluster::ClusterEvent;
use crate::store::{ApprovalFilter, ApprovalStore, Decision};
use crate::{Error, Result};

const APPROVAL_COLS: &str = "id, tenant_id, cluster_id, cluster_name, action, detail, reason, \
     requested_by, requested_by_id, requested_at, expires_at, state, decided_by, decided_at, \
     note, operation_id";

#[derive(FromRow)]
struct ApprovalRow {
    id: Uuid,
    tenant_id: Uuid,
    cluster_id: Uuid,
    cluster_name: String,
    action: String,
    detail: String,
    reason: String,
    requested_by: String,
    requested_by_id: Uuid,
    requested_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    state: String,
    decided_by: Option<String>,
    decided_at: Option<DateTime<Utc>>,
    note: Option<String>,
    operation_id: Option<Uuid>,
}

impl TryFrom<ApprovalRow> for Approval {
    type Error = Error;
    fn try_from(r: ApprovalRow) -> Result<Self> {
        let corrupt = |what: &str| Error::Corrupt(format!("approval {}: {what}", r.id));
        let action = ApprovalAction::parse(&r.action).ok_or_else(|| corrupt("action"))?;
        let restore = match action {
            ApprovalAction::Restore => Some(json::<RestoreDetail>("approval", r.id, &r.detail)?),
            _ => None,
        };
        Ok(Approval {
            action,
            restore,
            state: ApprovalState::parse(&r.state).ok_or_else(|| corrupt("state"))?,
            id: r.id,
            tenant_id: r.tenant_id,
            cluster_id: r.cluster_id,
            cluster_name: r.cluster_name,
            reason: r.reason,
            requested_by: r.requested_by,
            requested_by_id: r.requested_by_id,
            requested_at: r.requested_at,
            expires_at: r.expires_at,
            decided_by: r.decided_by,
            decided_at: r.decided_at,
            note: r.note,
            operation_id: r.operation_id,
        })
    }
}

#[async_trait]
impl ApprovalStore for SqlStore {
    async fn set_production(
        &self,
        cluster_id: Uuid,
        production: bool,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let sql = format!(
            "UPDATE clusters SET production = $2, updated_at = $3 WHERE id = {LIVE_CLUSTER_ID}"
        );
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(&sql)
                .bind(cluster_id)
                .bind(production)
                .bind(event.occurred_at)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(Error::NotFound("cluster"));
            }
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn request_approval(
        &self,
        a: &Approval,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let detail = match &a.restore {
            Some(r) => to_json(r)?,
            None => "{}".to_owned(),
        };
        audited_tx!(self, audit, |tx| {
            // Takes the cluster's row first (a live one), so that two requests for one cluster
            // queue here.
            let claimed = sqlx::query(&format!(
                "UPDATE clusters SET updated_at = updated_at WHERE id = {LIVE_CLUSTER_ID}"
            ))
            .bind(a.cluster_id)
            .execute(&mut *tx)
            .await?;
            if claimed.rows_affected() == 0 {
                return Err(Error::NotFound("cluster"));
            }
            let pending: Option<(String,)> = sqlx::query_as(
                "SELECT requested_by FROM approvals WHERE cluster_id = $1 AND action = $2 \
                 AND state = 'pending' AND expires_at > $3 LIMIT 1",
            )
            .bind(a.cluster_id)
            .bind(a.action.as_str())
            .bind(a.requested_at)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((by,)) = pending {
                return Err(Error::Conflict(format!(
                    "{by} asked to {} already; that request waits for approval",
                    a.action.words()
                )));
            }
            sqlx::query(
                "INSERT INTO approvals (id, tenant_id, cluster_id, cluster_name, action, detail, \
                 reason, requested_by, requested_by_id, requested_at, expires_at, state) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(a.id)
            .bind(a.tenant_id)
            .bind(a.cluster_id)
            .bind(&a.cluster_name)
            .bind(a.action.as_str())
            .bind(&detail)
            .bind(&a.reason)
            .bind(&a.requested_by)
            .bind(a.requested_by_id)
            .bind(a.requested_at)
            .bind(a.expires_at)
            .bind(a.state.as_str())
            .execute(&mut *tx)
            .await?;
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn approval(&self, id: Uuid) -> Result<Approval> {
        let sql = format!("SELECT {APPROVAL_COLS} FROM approvals WHERE id = $1");
        let row: Option<ApprovalRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("approval request"))?.try_into()
    }

    async fn approvals(&self, filter: &ApprovalFilter, limit: u32) -> Result<Vec<Approval>> {
        let mut clauses = vec!["1 = 1".to_owned()];
        let mut n = 1;
        if filter.cluster.is_some() {
            clauses.push(format!("cluster_id = ${n}"));
            n += 1;
        }
        if filter.pending_at.is_some() {
            // A deleted cluster's requests wait for nothing.
            clauses.push(format!(
                "state = 'pending' AND expires_at > ${n} AND EXISTS (SELECT 1 FROM clusters c \
                 WHERE c.id = approvals.cluster_id AND c.deleted_at IS NULL)"
            ));
            n += 1;
        }
        let tenants = filter.tenants.as_deref().unwrap_or_default();
        if filter.tenants.is_some() {
            if tenants.is_empty() {
                return Ok(Vec::new());
            }
            let marks: Vec<String> = (0..tenants.len()).map(|i| format!("${}", n + i)).collect();
            clauses.push(format!("tenant_id IN ({})", marks.join(", ")));
            n += tenants.len();
        }
        let sql = format!(
            "SELECT {APPROVAL_COLS} FROM approvals WHERE {} \
             ORDER BY requested_at DESC, id DESC LIMIT ${n}",
            clauses.join(" AND ")
        );
        let rows: Vec<ApprovalRow> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            if let Some(c) = filter.cluster {
                q = q.bind(c);
            }
            if let Some(at) = filter.pending_at {
                q = q.bind(at);
            }
            for t in tenants {
                q = q.bind(*t);
            }
            q.bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn decide_approval(
        &self,
        id: Uuid,
        d: &Decision<'_>,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<bool> {
        let mut decided = false;
        in_tx!(self, |tx| {
            let done = sqlx::query(
                "UPDATE approvals SET state = $2, decided_by = $3, decided_at = $4, note = $5 \
                 WHERE id = $1 AND state = 'pending' AND expires_at > $4",
            )
            .bind(id)
            .bind(d.state.as_str())
            .bind(d.by)
            .bind(d.at)
            .bind(d.note)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                decided = true;
                insert_events!(tx, [event]);
                audit_insert!(audit).execute(&mut *tx).await?;
                tx.commit().await?;
            }
        });
        Ok(decided)
    }

    async fn approval_outcome(
        &self,
        id: Uuid,
        outcome: std::result::Result<Option<Uuid>, &str>,
    ) -> Result<()> {
        let (state, note, op) = match outcome {
            Ok(op) => (ApprovalState::Approved, None, op),
            Err(why) => (ApprovalState::Failed, Some(why), None),
        };
        on_pool!(self, p => {
            sqlx::query(
                "UPDATE approvals SET state = $2, note = COALESCE($3, note), operation_id = $4 \
                 WHERE id = $1",
            )
            .bind(id)
            .bind(state.as_str())
            .bind(note)
            .bind(op)
            .execute(p)
            .await
            .map(|_| ())?
        });
        Ok(())
    }
}
