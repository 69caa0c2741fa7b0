//! Users and memberships.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{conflict_as, limit_offset, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::identity::{Member, Membership, MembershipSource, Role};
use crate::page::Page;
use crate::store::{MembershipStore, UserStore};
use crate::tenant::TenantSlug;
use crate::user::User;
use crate::{Error, Result};

const USER_COLUMNS: &str =
    "id, subject, username, email, display_name, is_operator, disabled, created_at, last_login_at";

#[derive(FromRow)]
struct UserRow {
    id: Uuid,
    subject: String,
    username: String,
    email: Option<String>,
    display_name: Option<String>,
    is_operator: bool,
    disabled: bool,
    created_at: DateTime<Utc>,
    last_login_at: Option<DateTime<Utc>>,
}

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            id: r.id,
            subject: r.subject,
            username: r.username,
            email: r.email,
            display_name: r.display_name,
            is_operator: r.is_operator,
            disabled: r.disabled,
            created_at: r.created_at,
            last_login_at: r.last_login_at,
        }
    }
}

#[derive(FromRow)]
struct MembershipRow {
    tenant_id: Uuid,
    slug: String,
    role: String,
    source: String,
}

#[derive(FromRow)]
struct MemberRow {
    user_id: Uuid,
    username: String,
    email: Option<String>,
    role: String,
    source: String,
}

fn role_and_source(role: &str, source: &str) -> Result<(Role, MembershipSource)> {
    let role = Role::parse(role).map_err(|e| Error::Corrupt(format!("membership: {e}")))?;
    let source = MembershipSource::parse(source)
        .ok_or_else(|| Error::Corrupt(format!("membership source '{source}'")))?;
    Ok((role, source))
}

async fn user_where(store: &SqlStore, column: &str, value: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {column} = $1");
    let row: Option<UserRow> = on_pool!(store, p => {
        sqlx::query_as(&sql).bind(value).fetch_optional(p).await?
    });
    Ok(row.map(User::from))
}

#[async_trait]
impl UserStore for SqlStore {
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    async fn create_user(
        &self,
        user: &User,
        password_hash: Option<&str>,
        audit: &AuditEvent,
    ) -> Result<()> {
        let conflict = || format!("a user named '{}' already exists", user.username);
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO users (id, subject, username, email, display_name, is_operator, \
                 disabled, created_at, password_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(user.id)
            .bind(&user.subject)
            .bind(&user.username)
            .bind(&user.email)
            .bind(&user.display_name)
            .bind(user.is_operator)
            .bind(user.disabled)
            .bind(user.created_at)
            .bind(password_hash)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
        });
        Ok(())
    }

    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
        let row: Option<UserRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.map(User::from).ok_or(Error::NotFound("user"))
    }

    async fn user_by_subject(&self, subject: &str) -> Result<Option<User>> {
        user_where(self, "subject", subject).await
    }

    async fn user_by_username(&self, username: &str) -> Result<Option<User>> {
        user_where(self, "username", username).await
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        const SQL: &str = "SELECT password_hash FROM users WHERE id = $1";
        let hash: Option<Option<String>> = on_pool!(self, p => {
            sqlx::query_scalar(SQL).bind(user_id).fetch_optional(p).await?
        });
        Ok(hash.flatten())
    }

    async fn list_users(&self, page: Page) -> Result<Vec<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username LIMIT $1 OFFSET $2");
        let (limit, offset) = limit_offset(page);
        let rows: Vec<UserRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(limit).bind(offset).fetch_all(p).await?
        });
        Ok(rows.into_iter().map(User::from).collect())
    }

    async fn has_active_operator(&self) -> Result<bool> {
        const SQL: &str = "SELECT EXISTS (SELECT 1 FROM users \
             WHERE is_operator = TRUE AND disabled = FALSE)";
        let exists: bool = on_pool!(self, p => sqlx::query_scalar(SQL).fetch_one(p).await?);
        Ok(exists)
    }

    #[tracing::instrument(skip_all, fields(user = %user.username))]
    async fn upsert_external_login(
        &self,
        user: &User,
        memberships: &[(Uuid, Role)],
        audit: &AuditEvent,
    ) -> Result<()> {
        let conflict = || {
            format!(
                "the username '{}' belongs to another account",
                user.username
            )
        };
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO users (id, subject, username, email, display_name, is_operator, \
                 disabled, created_at, last_login_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                 ON CONFLICT (subject) DO UPDATE SET username = excluded.username, \
                 email = excluded.email, display_name = excluded.display_name, \
                 is_operator = excluded.is_operator, last_login_at = excluded.last_login_at",
            )
            .bind(user.id)
            .bind(&user.subject)
            .bind(&user.username)
            .bind(&user.email)
            .bind(&user.display_name)
            .bind(user.is_operator)
            .bind(user.disabled)
            .bind(user.created_at)
            .bind(user.last_login_at)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
            sqlx::query("DELETE FROM memberships WHERE user_id = $1 AND source = 'oidc'")
                .bind(user.id)
                .execute(&mut *tx)
                .await?;
            for (tenant_id, role) in memberships {
                // A manual membership of the same tenant stays as it is.
                sqlx::query(
                    "INSERT INTO memberships (tenant_id, user_id, role, source, created_at) \
                     VALUES ($1, $2, $3, 'oidc', $4) ON CONFLICT (tenant_id, user_id) DO NOTHING",
                )
                .bind(tenant_id)
                .bind(user.id)
                .bind(role.as_str())
                .bind(audit.occurred_at)
                .execute(&mut *tx)
                .await?;
            }
        });
        Ok(())
    }

    async fn record_login(
        &self,
        user_id: Uuid,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query("UPDATE users SET last_login_at = $1 WHERE id = $2")
                .bind(at)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
        });
        Ok(())
    }
}

#[async_trait]
impl MembershipStore for SqlStore {
    async fn memberships_of(&self, user_id: Uuid) -> Result<Vec<Membership>> {
        const SQL: &str = "SELECT m.tenant_id, t.slug, m.role, m.source FROM memberships m \
             JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = $1 ORDER BY t.slug";
        let rows: Vec<MembershipRow> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(user_id).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|r| {
                let (role, source) = role_and_source(&r.role, &r.source)?;
                let slug = TenantSlug::parse(&r.slug).map_err(|e| Error::Corrupt(e.to_string()))?;
                Ok(Membership {
                    tenant_id: r.tenant_id,
                    tenant_slug: slug,
                    role,
                    source,
                })
            })
            .collect()
    }

    async fn members_of(&self, tenant_id: Uuid) -> Result<Vec<Member>> {
        const SQL: &str = "SELECT m.user_id, u.username, u.email, m.role, m.source \
             FROM memberships m JOIN users u ON u.id = m.user_id \
             WHERE m.tenant_id = $1 ORDER BY u.username";
        let rows: Vec<MemberRow> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(tenant_id).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|r| {
                let (role, source) = role_and_source(&r.role, &r.source)?;
                Ok(Member {
                    user_id: r.user_id,
                    username: r.username,
                    email: r.email,
                    role,
                    source,
                })
            })
            .collect()
    }

    async fn put_membership(
        &self,
        tenant_id: Uuid,
        user_id: Uuid,
        role: Role,
        source: MembershipSource,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO memberships (tenant_id, user_id, role, source, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, user_id) \
                 DO UPDATE SET role = excluded.role, source = excluded.source",
            )
            .bind(tenant_id)
            .bind(user_id)
            .bind(role.as_str())
            .bind(source.as_str())
            .bind(audit.occurred_at)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    async fn delete_membership(
        &self,
        tenant_id: Uuid,
        user_id: Uuid,
        audit: &AuditEvent,
    ) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let deleted =
                sqlx::query("DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2")
                    .bind(tenant_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if deleted == 0 {
                // Nothing changed: roll back, so no success is audited.
                return Ok(false);
            }
        });
        Ok(true)
    }
}
