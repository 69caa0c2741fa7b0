//! The vault's SQL backend: sealed strings only.

use async_trait::async_trait;

use super::{Pool, SqlStore};
use crate::vault::{SecretBackend, SecretRef};
use crate::Result;

#[async_trait]
impl SecretBackend for SqlStore {
    async fn put_sealed(&self, at: &SecretRef, sealed: &str) -> Result<()> {
        const SQL: &str = "INSERT INTO secrets (scope, name, sealed, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (scope, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at";
        let now = crate::clock::now();
        on_pool!(self, p => {
            sqlx::query(SQL).bind(&at.scope).bind(&at.name).bind(sealed).bind(now).execute(p).await.map(|_| ())?
        });
        Ok(())
    }

    async fn replace_sealed(&self, at: &SecretRef, expected: &str, sealed: &str) -> Result<bool> {
        const SQL: &str = "UPDATE secrets SET sealed = $3, updated_at = $4 \
             WHERE scope = $1 AND name = $2 AND sealed = $5";
        let now = crate::clock::now();
        let n = on_pool!(self, p => {
            sqlx::query(SQL)
                .bind(&at.scope)
                .bind(&at.name)
                .bind(sealed)
                .bind(now)
                .bind(expected)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(n > 0)
    }

    async fn get_sealed(&self, at: &SecretRef) -> Result<Option<String>> {
        const SQL: &str = "SELECT sealed FROM secrets WHERE scope = $1 AND name = $2";
        let sealed: Option<String> = on_pool!(self, p => {
            sqlx::query_scalar(SQL).bind(&at.scope).bind(&at.name).fetch_optional(p).await?
        });
        Ok(sealed)
    }

    async fn delete_sealed(&self, at: &SecretRef) -> Result<bool> {
        const SQL: &str = "DELETE FROM secrets WHERE scope = $1 AND name = $2";
        let n = on_pool!(self, p => {
            sqlx::query(SQL).bind(&at.scope).bind(&at.name).execute(p).await?.rows_affected()
        });
        Ok(n > 0)
    }

    async fn list_sealed(&self) -> Result<Vec<(SecretRef, String)>> {
        const SQL: &str = "SELECT scope, name, sealed FROM secrets ORDER BY scope, name";
        let rows: Vec<(String, String, String)> = on_pool!(self, p => {
            sqlx::query_as(SQL).fetch_all(p).await?
        });
        Ok(rows
            .into_iter()
            .map(|(scope, name, sealed)| (SecretRef { scope, name }, sealed))
            .collect())
    }
}
