//! Session records for the web layer's session manager.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::read_batches::placeholders;
use super::{Pool, SqlStore};
use crate::store::SessionStore;
use crate::Result;

/// A stored session: its data and when it expires.
pub(super) type SessionRow = (String, DateTime<Utc>);

#[async_trait]
impl SessionStore for SqlStore {
    async fn session_load(
        &self,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(String, DateTime<Utc>)>> {
        // Loads arriving together share one query (every page request loads its session
        // first); each keeps only a session that is live at its own `now`.
        let row = self
            .sessions
            .read(id, |ids| async move { self.sessions_by_id(ids).await })
            .await?;
        Ok(row.filter(|(_, expires_at)| *expires_at > now))
    }

    async fn session_save(&self, id: &str, data: &str, expires_at: DateTime<Utc>) -> Result<()> {
        const SQL: &str = "INSERT INTO sessions (id, data, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at";
        on_pool!(self, p => {
            sqlx::query(SQL).bind(id).bind(data).bind(expires_at).execute(p).await.map(|_| ())?
        });
        Ok(())
    }

    async fn session_delete(&self, id: &str) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query("DELETE FROM sessions WHERE id = $1").bind(id).execute(p).await.map(|_| ())?
        });
        Ok(())
    }

    async fn sessions_purge_expired(&self, now: DateTime<Utc>) -> Result<u64> {
        let n = on_pool!(self, p => {
            sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
                .bind(now)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(n)
    }
}

impl SqlStore {
    /// The stored sessions of `ids` (distinct), expired ones included.
    async fn sessions_by_id(&self, mut ids: Vec<String>) -> Result<HashMap<String, SessionRow>> {
        let sql = format!(
            "SELECT id, data, expires_at FROM sessions WHERE id IN ({})",
            placeholders(&mut ids, 1)
        );
        let rows: Vec<(String, String, DateTime<Utc>)> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            for id in &ids {
                q = q.bind(id);
            }
            q.fetch_all(p).await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, data, expires_at)| (id, (data, expires_at)))
            .collect())
    }
}
