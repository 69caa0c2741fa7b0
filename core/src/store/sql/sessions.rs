//! Session records for the web layer's session manager.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Pool, SqlStore};
use crate::store::SessionStore;
use crate::Result;

#[async_trait]
impl SessionStore for SqlStore {
    async fn session_load(
        &self,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(String, DateTime<Utc>)>> {
        const SQL: &str = "SELECT data, expires_at FROM sessions WHERE id = $1 AND expires_at > $2";
        let data: Option<(String, DateTime<Utc>)> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(id).bind(now).fetch_optional(p).await?
        });
        Ok(data)
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
