//! Local accounts created in the portal, their invitations (only hashes of the links'
//! secrets), the operators' user list and the first-run figures.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{conflict_as, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::identity::Role;
use crate::invite::{Invite, SetupCounts, UserSummary};
use crate::store::PeopleStore;
use crate::user::User;
use crate::{Error, Result};

const INVITE_COLUMNS: &str = "id, user_id, created_by, created_at, expires_at, used_at";

#[derive(FromRow)]
struct InviteRow {
    id: Uuid,
    user_id: Uuid,
    created_by: String,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    used_at: Option<DateTime<Utc>>,
}

impl From<InviteRow> for Invite {
    fn from(r: InviteRow) -> Self {
        Invite {
            id: r.id,
            user_id: r.user_id,
            created_by: r.created_by,
            created_at: r.created_at,
            expires_at: r.expires_at,
            used_at: r.used_at,
        }
    }
}

#[derive(FromRow)]
struct DirectoryRow {
    id: Uuid,
    subject: String,
    username: String,
    email: Option<String>,
    display_name: Option<String>,
    is_operator: bool,
    disabled: bool,
    created_at: DateTime<Utc>,
    last_login_at: Option<DateTime<Utc>>,
    has_password: bool,
}

#[derive(FromRow)]
struct TenantRoleRow {
    user_id: Uuid,
    slug: String,
    role: String,
}

#[derive(FromRow)]
struct OpenInviteRow {
    user_id: Uuid,
    expires_at: DateTime<Utc>,
}

const INSERT_INVITE: &str = "INSERT INTO user_invites \
     (id, user_id, token_hash, created_by, created_at, expires_at) \
     VALUES ($1, $2, $3, $4, $5, $6)";

/// Binds an [`Invite`] and its hash to [`INSERT_INVITE`].
macro_rules! invite_insert {
    ($i:expr, $hash:expr) => {
        sqlx::query(INSERT_INVITE)
            .bind($i.id)
            .bind($i.user_id)
            .bind($hash)
            .bind(&$i.created_by)
            .bind($i.created_at)
            .bind($i.expires_at)
    };
}

#[async_trait]
impl PeopleStore for SqlStore {
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    async fn create_invited_user(
        &self,
        user: &User,
        invite: &Invite,
        token_hash: &str,
        audit: &AuditEvent,
    ) -> Result<()> {
        let conflict = || format!("a user named '{}' already exists", user.username);
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO users (id, subject, username, email, display_name, is_operator, \
                 disabled, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(user.id)
            .bind(&user.subject)
            .bind(&user.username)
            .bind(&user.email)
            .bind(&user.display_name)
            .bind(user.is_operator)
            .bind(user.disabled)
            .bind(user.created_at)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
            invite_insert!(invite, token_hash).execute(&mut *tx).await?;
        });
        Ok(())
    }

    async fn replace_invite(
        &self,
        invite: &Invite,
        token_hash: &str,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query("DELETE FROM user_invites WHERE user_id = $1 AND used_at IS NULL")
                .bind(invite.user_id)
                .execute(&mut *tx)
                .await?;
            invite_insert!(invite, token_hash).execute(&mut *tx).await?;
        });
        Ok(())
    }

    async fn invite_by_hash(&self, token_hash: &str) -> Result<Option<Invite>> {
        let sql = format!("SELECT {INVITE_COLUMNS} FROM user_invites WHERE token_hash = $1");
        let row: Option<InviteRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(token_hash).fetch_optional(p).await?
        });
        Ok(row.map(Invite::from))
    }

    #[tracing::instrument(skip_all)]
    async fn accept_invite(
        &self,
        invite_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            // The check and the use in one statement: two tabs posting the same link at once
            // cannot both set a password.
            let used = sqlx::query(
                "UPDATE user_invites SET used_at = $1 \
                 WHERE id = $2 AND used_at IS NULL AND expires_at > $1",
            )
            .bind(now)
            .bind(invite_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if used == 0 {
                // Nothing changed: roll back, so no success is audited.
                return Ok(false);
            }
            sqlx::query(
                "UPDATE users SET password_hash = $1 \
                 WHERE id = (SELECT user_id FROM user_invites WHERE id = $2)",
            )
            .bind(password_hash)
            .bind(invite_id)
            .execute(&mut *tx)
            .await?;
        });
        Ok(true)
    }

    async fn user_directory(&self, now: DateTime<Utc>, limit: u32) -> Result<Vec<UserSummary>> {
        const USERS: &str = "SELECT id, subject, username, email, display_name, is_operator, \
             disabled, created_at, last_login_at, password_hash IS NOT NULL AS has_password \
             FROM users ORDER BY username LIMIT $1";
        const ROLES: &str = "SELECT m.user_id, t.slug, m.role FROM memberships m \
             JOIN tenants t ON t.id = m.tenant_id ORDER BY t.slug";
        const INVITES: &str = "SELECT user_id, expires_at FROM user_invites \
             WHERE used_at IS NULL AND expires_at > $1";
        let (users, roles, invites): (Vec<DirectoryRow>, Vec<TenantRoleRow>, Vec<OpenInviteRow>) = on_pool!(self, p => {
            (
                sqlx::query_as(USERS).bind(i64::from(limit)).fetch_all(p).await?,
                sqlx::query_as(ROLES).fetch_all(p).await?,
                sqlx::query_as(INVITES).bind(now).fetch_all(p).await?,
            )
        });
        let mut tenants: HashMap<Uuid, Vec<(String, Role)>> = HashMap::new();
        for r in roles {
            let role =
                Role::parse(&r.role).map_err(|e| Error::Corrupt(format!("membership: {e}")))?;
            tenants.entry(r.user_id).or_default().push((r.slug, role));
        }
        let mut open: HashMap<Uuid, DateTime<Utc>> = HashMap::new();
        for i in invites {
            let e = open.entry(i.user_id).or_insert(i.expires_at);
            *e = (*e).max(i.expires_at);
        }
        Ok(users
            .into_iter()
            .map(|r| UserSummary {
                local: r.subject.starts_with("local:"),
                pending: r.subject.starts_with(crate::invite::PENDING_PREFIX),
                has_password: r.has_password,
                invite_expires_at: open.get(&r.id).copied(),
                tenants: tenants.remove(&r.id).unwrap_or_default(),
                user: User {
                    id: r.id,
                    subject: r.subject,
                    username: r.username,
                    email: r.email,
                    display_name: r.display_name,
                    is_operator: r.is_operator,
                    disabled: r.disabled,
                    created_at: r.created_at,
                    last_login_at: r.last_login_at,
                },
            })
            .collect())
    }

    async fn claim_pending_user(&self, username: &str, subject: &str) -> Result<bool> {
        const SQL: &str = "UPDATE users SET subject = $1 WHERE username = $2 AND subject = $3";
        let pending = format!("{}{username}", crate::invite::PENDING_PREFIX);
        let claimed = on_pool!(self, p => {
            sqlx::query(SQL).bind(subject).bind(username).bind(&pending).execute(p).await?.rows_affected()
        });
        Ok(claimed == 1)
    }

    async fn setup_counts(&self) -> Result<SetupCounts> {
        const SQL: &str =
            "SELECT (SELECT COUNT(*) FROM tenants), (SELECT COUNT(*) FROM providers), \
             (SELECT COUNT(*) FROM templates), (SELECT COUNT(*) FROM users), \
             (SELECT COUNT(*) FROM memberships)";
        let (t, p, tp, u, m): (i64, i64, i64, i64, i64) = on_pool!(self, pool => {
            sqlx::query_as(SQL).fetch_one(pool).await?
        });
        let n = |v: i64| u64::try_from(v).unwrap_or_default();
        Ok(SetupCounts {
            tenants: n(t),
            providers: n(p),
            templates: n(tp),
            users: n(u),
            memberships: n(m),
        })
    }
}
