//! The audit trail.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{contains_pattern, limit_offset, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::{AuditEvent, AuditQuery, Outcome};
use crate::page::Page;
use crate::store::AuditStore;
use crate::{Error, Result};

#[derive(FromRow)]
struct AuditRow {
    id: Uuid,
    occurred_at: DateTime<Utc>,
    actor: String,
    tenant_id: Option<Uuid>,
    action: String,
    target: String,
    outcome: String,
    source_ip: Option<String>,
    detail: Option<String>,
    tenant_slug: Option<String>,
}

impl TryFrom<AuditRow> for AuditEvent {
    type Error = Error;
    fn try_from(r: AuditRow) -> Result<Self> {
        let outcome = Outcome::parse(&r.outcome)
            .ok_or_else(|| Error::Corrupt(format!("audit event {}: outcome", r.id)))?;
        Ok(AuditEvent {
            id: r.id,
            occurred_at: r.occurred_at,
            actor: r.actor,
            tenant_id: r.tenant_id,
            action: r.action,
            target: r.target,
            outcome,
            source_ip: r.source_ip,
            detail: r.detail,
            tenant_slug: r.tenant_slug,
        })
    }
}

/// The WHERE clause for `q`, with `$n` placeholders in the order [`list_audit`] binds them.
fn where_clause(q: &AuditQuery) -> String {
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    let mut sql = String::from(" WHERE 1 = 1");
    if q.tenant_id.is_some() {
        sql += &format!(" AND a.tenant_id = {}", next());
    }
    if let Some(ids) = &q.within_tenants {
        let list: Vec<String> = ids.iter().map(|_| next()).collect();
        sql += &format!(" AND a.tenant_id IN ({})", list.join(", "));
    }
    if q.actor.is_some() {
        sql += &format!(" AND a.actor = {}", next());
    }
    match q.action.as_deref() {
        Some(a) if a.ends_with('.') => sql += &format!(" AND a.action LIKE {} ESCAPE '\\'", next()),
        Some(_) => sql += &format!(" AND a.action = {}", next()),
        None => {}
    }
    if q.since.is_some() {
        sql += &format!(" AND a.occurred_at >= {}", next());
    }
    if q.until.is_some() {
        sql += &format!(" AND a.occurred_at < {}", next());
    }
    sql += &format!(
        " ORDER BY a.occurred_at DESC, a.id DESC LIMIT {} OFFSET {}",
        next(),
        next()
    );
    sql
}

#[async_trait]
impl AuditStore for SqlStore {
    #[tracing::instrument(skip_all, fields(action = %event.action, outcome = %event.outcome))]
    async fn record_audit(&self, event: &AuditEvent) -> Result<()> {
        on_pool!(self, p => audit_insert!(event).execute(p).await.map(|_| ())?);
        Ok(())
    }

    #[tracing::instrument(skip_all)]
    async fn list_audit(&self, q: &AuditQuery, page: Page) -> Result<Vec<AuditEvent>> {
        if q.within_tenants.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT a.id, a.occurred_at, a.actor, a.tenant_id, a.action, a.target, a.outcome, \
             a.source_ip, a.detail, t.slug AS tenant_slug \
             FROM audit_events a LEFT JOIN tenants t ON t.id = a.tenant_id{}",
            where_clause(q)
        );
        // `contains_pattern` gives %x%; a prefix needs x% only.
        let action = q.action.as_deref().map(|a| match a.strip_suffix('.') {
            Some(prefix) => {
                let p = contains_pattern(&format!("{prefix}."));
                p[1..].to_owned()
            }
            None => a.to_owned(),
        });
        let (limit, offset) = limit_offset(page);
        let rows: Vec<AuditRow> = on_pool!(self, p => {
            let mut query = sqlx::query_as(&sql);
            if let Some(t) = q.tenant_id {
                query = query.bind(t);
            }
            for t in q.within_tenants.iter().flatten() {
                query = query.bind(*t);
            }
            if let Some(actor) = &q.actor {
                query = query.bind(actor);
            }
            if let Some(action) = &action {
                query = query.bind(action);
            }
            if let Some(since) = q.since {
                query = query.bind(since);
            }
            if let Some(until) = q.until {
                query = query.bind(until);
            }
            query.bind(limit).bind(offset).fetch_all(p).await?
        });
        rows.into_iter().map(AuditEvent::try_from).collect()
    }
}
