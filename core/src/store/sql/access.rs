//! The per-user access records ([`AccessStore`]): which KQueen user holds a ServiceAccount in
//! which cluster, with which role, and which of them went stale.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::store::{AccessGrant, AccessStore, StaleAccess};
use crate::Result;

impl SqlStore {
    /// Deletes a user's access record in a cluster (only while it holds `role`, when given),
    /// with `audit`; false when there was none.
    async fn delete_access_record(
        &self,
        cluster_id: Uuid,
        user_id: Uuid,
        role: Option<&str>,
        audit: &AuditEvent,
    ) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(
                "DELETE FROM cluster_access WHERE cluster_id = $1 AND user_id = $2 \
                 AND ($3 IS NULL OR role = $3)",
            )
            .bind(cluster_id)
            .bind(user_id)
            .bind(role)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
        });
        Ok(true)
    }
}

/// Recorded ServiceAccounts that no longer match their user's membership (see
/// `AccessStore::stale_accesses`); callers add conditions and order.
const STALE_ACCESS_SQL: &str = "SELECT a.cluster_id, a.user_id, u.username, a.role, m.role, \
     u.disabled FROM cluster_access a \
     JOIN clusters c ON c.id = a.cluster_id \
     JOIN users u ON u.id = a.user_id \
     LEFT JOIN memberships m ON m.tenant_id = c.tenant_id AND m.user_id = a.user_id \
     WHERE c.deleted_at IS NULL AND c.state IN ('ready', 'updating') \
       AND (m.role IS NULL OR m.role <> a.role OR u.disabled)";

/// A row of [`STALE_ACCESS_SQL`].
type StaleRow = (Uuid, Uuid, String, String, Option<String>, bool);

#[async_trait]
impl AccessStore for SqlStore {
    async fn put_access(
        &self,
        cluster_id: Uuid,
        user_id: Uuid,
        service_account: &str,
        role: &str,
        expires_at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO cluster_access (cluster_id, user_id, service_account, role, \
                 last_issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (cluster_id, user_id) DO UPDATE SET service_account = excluded.service_account, \
                 role = excluded.role, last_issued_at = excluded.last_issued_at, expires_at = excluded.expires_at",
            )
            .bind(cluster_id)
            .bind(user_id)
            .bind(service_account)
            .bind(role)
            .bind(audit.occurred_at)
            .bind(expires_at)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    async fn access_of(&self, cluster_id: Uuid, user_id: Uuid) -> Result<Option<String>> {
        const SQL: &str =
            "SELECT service_account FROM cluster_access WHERE cluster_id = $1 AND user_id = $2";
        let sa: Option<String> = on_pool!(self, p => {
            sqlx::query_scalar(SQL).bind(cluster_id).bind(user_id).fetch_optional(p).await?
        });
        Ok(sa)
    }

    async fn delete_access(
        &self,
        cluster_id: Uuid,
        user_id: Uuid,
        audit: &AuditEvent,
    ) -> Result<bool> {
        self.delete_access_record(cluster_id, user_id, None, audit)
            .await
    }

    async fn accesses_of(&self, cluster_id: Uuid) -> Result<Vec<String>> {
        const SQL: &str = "SELECT u.username FROM cluster_access a \
             JOIN users u ON u.id = a.user_id WHERE a.cluster_id = $1 ORDER BY u.username";
        let names: Vec<String> = on_pool!(self, p => {
            sqlx::query_scalar(SQL).bind(cluster_id).fetch_all(p).await?
        });
        Ok(names)
    }

    async fn stale_accesses(&self, limit: u32) -> Result<Vec<StaleAccess>> {
        let sql = format!("{STALE_ACCESS_SQL} ORDER BY a.cluster_id, a.user_id LIMIT $1");
        let rows: Vec<StaleRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(i64::from(limit)).fetch_all(p).await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(cluster_id, user_id, username, granted_role, current_role, disabled)| {
                    StaleAccess {
                        cluster_id,
                        user_id,
                        username,
                        granted_role,
                        current_role,
                        disabled,
                    }
                },
            )
            .collect())
    }

    async fn still_stale(&self, access: &StaleAccess) -> Result<bool> {
        let sql =
            format!("{STALE_ACCESS_SQL} AND a.cluster_id = $1 AND a.user_id = $2 AND a.role = $3");
        let row: Option<StaleRow> = on_pool!(self, p => {
            sqlx::query_as(&sql)
                .bind(access.cluster_id)
                .bind(access.user_id)
                .bind(&access.granted_role)
                .fetch_optional(p)
                .await?
        });
        Ok(row.is_some())
    }

    async fn delete_stale_access(&self, access: &StaleAccess, audit: &AuditEvent) -> Result<bool> {
        self.delete_access_record(
            access.cluster_id,
            access.user_id,
            Some(&access.granted_role),
            audit,
        )
        .await
    }

    async fn access_grants(&self, limit: u32) -> Result<Vec<AccessGrant>> {
        const SQL: &str = "SELECT a.cluster_id, u.username, a.role FROM cluster_access a \
             JOIN clusters c ON c.id = a.cluster_id \
             JOIN users u ON u.id = a.user_id \
             JOIN memberships m ON m.tenant_id = c.tenant_id AND m.user_id = a.user_id \
             WHERE c.deleted_at IS NULL AND c.state IN ('ready', 'updating') \
               AND m.role = a.role AND NOT u.disabled \
             ORDER BY a.cluster_id, u.username LIMIT $1";
        let rows: Vec<(Uuid, String, String)> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(i64::from(limit)).fetch_all(p).await?
        });
        Ok(rows
            .into_iter()
            .map(|(cluster_id, username, role)| AccessGrant {
                cluster_id,
                username,
                role,
            })
            .collect())
    }
}
