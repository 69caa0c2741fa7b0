//! API tokens (only their hashes).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::store::TokenStore;
use crate::token::ApiToken;
use crate::Result;

const COLUMNS: &str = "id, user_id, name, prefix, created_at, expires_at, last_used_at, revoked_at";

#[derive(FromRow)]
struct TokenRow {
    id: Uuid,
    user_id: Uuid,
    name: String,
    prefix: String,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

impl From<TokenRow> for ApiToken {
    fn from(r: TokenRow) -> Self {
        ApiToken {
            id: r.id,
            user_id: r.user_id,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

#[async_trait]
impl TokenStore for SqlStore {
    async fn create_token(&self, token: &ApiToken, hash: &str, audit: &AuditEvent) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO api_tokens (id, user_id, name, prefix, token_hash, created_at, \
                 expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(token.id)
            .bind(token.user_id)
            .bind(&token.name)
            .bind(&token.prefix)
            .bind(hash)
            .bind(token.created_at)
            .bind(token.expires_at)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    async fn tokens_of(&self, user_id: Uuid) -> Result<Vec<ApiToken>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM api_tokens WHERE user_id = $1 ORDER BY created_at DESC LIMIT 200"
        );
        let rows: Vec<TokenRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(user_id).fetch_all(p).await?
        });
        Ok(rows.into_iter().map(ApiToken::from).collect())
    }

    async fn token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
        let sql = format!("SELECT {COLUMNS} FROM api_tokens WHERE token_hash = $1");
        let row: Option<TokenRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(hash).fetch_optional(p).await?
        });
        Ok(row.map(ApiToken::from))
    }

    async fn revoke_token(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let revoked = sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 \
                 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL",
            )
            .bind(at)
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if revoked == 0 {
                // Nothing changed: roll back, so no success is audited.
                return Ok(false);
            }
        });
        Ok(true)
    }

    async fn touch_token(&self, id: Uuid, at: DateTime<Utc>) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2")
                .bind(at)
                .bind(id)
                .execute(p)
                .await
                .map(|_| ())?
        });
        Ok(())
    }
}
