//! The SQL store, one implementation for SQLite and Postgres.
//!
//! Both dialects run the same SQL text (`$n` placeholders work in both); only the schema
//! migrations differ (`migrations/sqlite`, `migrations/postgres`). Queries are built at run
//! time with `query_as` + `FromRow` rather than compile-time macros, because one query serves
//! two databases. [`on_pool!`] expands a body once per dialect, so each copy is type-checked
//! against its own driver with no generic bounds to carry around.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use super::{Backend, Counts, Store};
use crate::cluster::{Cluster, Provider, Template};
use crate::page::Page;
use crate::tenant::Tenant;
use crate::{Error, Result};
use list_cache::{ListCache, VersionReads};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/postgres");

#[derive(Clone, Debug)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A [`Store`] on SQLite or Postgres.
#[derive(Clone, Debug)]
pub struct SqlStore {
    pool: Pool,
    lists: Arc<Lists>,
    /// Session loads arriving together, sent as one query.
    sessions: Arc<read_batches::ReadBatches<sessions::SessionRow>>,
}

/// List pages, clusters by id, and the catalog's providers and templates by id, kept in memory
/// while the database's list version is unchanged.
#[derive(Debug, Default)]
struct Lists {
    version: VersionReads,
    clusters: ListCache<(Vec<Cluster>, u64)>,
    cluster_by_id: ListCache<Cluster>,
    tenants: ListCache<Vec<Tenant>>,
    providers: ListCache<Provider>,
    templates: ListCache<Template>,
}

/// Runs `$body` with `$p` bound to the concrete pool of the store's dialect.
macro_rules! on_pool {
    ($store:expr, $p:ident => $body:expr) => {
        match &$store.pool {
            Pool::Sqlite($p) => $body,
            Pool::Postgres($p) => $body,
        }
    };
}

/// Binds the text parameters, then the tenant ids, to a query.
macro_rules! bind_all {
    ($q:expr, $texts:expr, $ids:expr) => {{
        let mut q = $q;
        for t in $texts {
            q = q.bind(t);
        }
        for id in $ids {
            q = q.bind(*id);
        }
        q
    }};
}

const INSERT_AUDIT: &str = "INSERT INTO audit_events \
     (id, occurred_at, actor, tenant_id, action, target, outcome, source_ip, detail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Binds an [`AuditEvent`] to [`INSERT_AUDIT`].
macro_rules! audit_insert {
    ($e:expr) => {
        sqlx::query(INSERT_AUDIT)
            .bind($e.id)
            .bind($e.occurred_at)
            .bind(&$e.actor)
            .bind($e.tenant_id)
            .bind(&$e.action)
            .bind(&$e.target)
            .bind($e.outcome.as_str())
            .bind(&$e.source_ip)
            .bind(&$e.detail)
    };
}

/// Runs `$body` with `$tx` bound to a new transaction of the store's dialect; `$body` commits.
///
/// SQLite transactions begin IMMEDIATE, taking the write lock first (waiting up to the busy
/// timeout). A deferred transaction that reads and then writes fails at once with
/// SQLITE_BUSY when another connection committed in between, and the busy timeout does not
/// retry that case: concurrent requests would get spurious internal errors. Both begin on a
/// task of their own, so that a caller dropped meanwhile cannot leave a connection inside a
/// transaction (`begin.rs`).
macro_rules! in_tx {
    ($store:expr, |$tx:ident| $body:block) => {
        match &$store.pool {
            Pool::Sqlite(p) => {
                let mut $tx = $crate::store::sql::begin::sqlite(p).await?;
                $body
            }
            Pool::Postgres(p) => {
                let mut $tx = $crate::store::sql::begin::postgres(p).await?;
                $body
            }
        }
    };
}

/// Runs `$body` (statements on `$tx`) and the insertion of the audit event `$audit` in one
/// transaction of the store's dialect: both are stored, or neither.
macro_rules! audited_tx {
    ($store:expr, $audit:expr, |$tx:ident| $body:block) => {
        in_tx!($store, |$tx| {
            $body
            audit_insert!($audit).execute(&mut *$tx).await?;
            $tx.commit().await?;
        })
    };
}

mod access;
mod addons;
mod applications;
mod approvals;
mod audit;
mod autoscaling;
mod backups;
mod begin;
mod catalog;
mod cluster_history;
// Before `clusters`: their insert and admission macros are used there.
mod operations;
mod quotas;
mod read_batches;

mod clusters;
mod fleet_clusters;
mod fleet_queries;
mod inventory;
mod job_leases;
mod list_cache;
mod people;
#[cfg(test)]
mod plans;
mod rollouts;
mod secrets;
mod sessions;
mod shared_storage;
mod statistics;
mod tenants;
mod timeline;
mod tokens;
mod users;

/// Postgres connections idle this long are pinged before use.
const PING_WHEN_IDLE: Duration = Duration::from_secs(30);

/// Opens the database named by `url` (`sqlite://…` or `postgres://…`) and applies pending
/// migrations. A SQLite file and its directory are created when missing.
#[tracing::instrument(skip_all, fields(backend))]
pub async fn connect(url: &str) -> Result<SqlStore> {
    let pool = if url.starts_with("sqlite:") {
        tracing::Span::current().record("backend", "sqlite");
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(|_| Error::UnsupportedDatabase("malformed sqlite URL".into()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        if let Some(dir) = opts.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Error::UnsupportedDatabase(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
        }
        // The database is a file in this process: there is no connection to lose, and sqlx's
        // default ping before every use was a round trip to the connection's thread per query.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .connect_with(opts)
            .await?;
        SQLITE_MIGRATIONS.run(&pool).await?;
        Pool::Sqlite(pool)
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        tracing::Span::current().record("backend", "postgres");
        // The URL may hold a password: never echo it.
        let opts = PgConnectOptions::from_str(url)
            .map_err(|_| Error::UnsupportedDatabase("malformed postgres URL".into()))?;
        // sqlx pings a connection before every use by default: a network round trip per
        // query. Ping only connections that sat idle long enough for a server restart or a
        // firewall to have dropped them; a busy connection that breaks fails one query.
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_WHEN_IDLE {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(opts)
            .await?;
        POSTGRES_MIGRATIONS.run(&pool).await?;
        Pool::Postgres(pool)
    } else {
        // Name the scheme only when there clearly is one: anything else may be a secret.
        let scheme = url
            .split_once("://")
            .map(|(s, _)| s)
            .filter(|s| s.len() <= 16 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
        let got = scheme.map_or_else(|| "no scheme".to_owned(), |s| format!("scheme '{s}'"));
        return Err(Error::UnsupportedDatabase(format!(
            "{got} (expected sqlite:// or postgres://)"
        )));
    };
    Ok(SqlStore {
        pool,
        lists: Arc::default(),
        sessions: Arc::default(),
    })
}

impl SqlStore {
    /// The version of what list pages read, bumped by every committed write to clusters,
    /// tenants, memberships, providers and templates (triggers; see [`list_cache`]).
    async fn list_version(&self) -> Result<i64> {
        const SQL: &str = "SELECT version FROM list_version";
        let query =
            || async { Ok(on_pool!(self, p => sqlx::query_scalar(SQL).fetch_one(p).await?)) };
        self.lists.version.read(query).await
    }

    /// The page under `key`: from `cache` when the list version still is the one it was read
    /// at, else read by `read` (after reading the version, which is what makes it safe).
    async fn cached_list<V, F>(
        &self,
        cache: &ListCache<V>,
        key: String,
        read: impl FnOnce() -> F,
    ) -> Result<Arc<V>>
    where
        F: Future<Output = Result<V>>,
    {
        let version = self.list_version().await?;
        if let Some(page) = cache.get(&key, version) {
            return Ok(page);
        }
        let page = Arc::new(read().await?);
        cache.put(key, version, page.clone());
        Ok(page)
    }

    /// The row `id` as [`Self::cached_list`] keeps it: a copy of the kept one while the list
    /// version is unchanged, else read by `read`.
    async fn cached_by_id<V: Clone, F>(
        &self,
        cache: &ListCache<V>,
        id: Uuid,
        read: impl FnOnce() -> F,
    ) -> Result<V>
    where
        F: Future<Output = Result<V>>,
    {
        let kept = self.cached_list(cache, id.to_string(), read).await?;
        Ok(V::clone(&kept))
    }

    /// List pages (and clusters and catalog rows by id) answered from memory since the store
    /// was opened.
    pub fn list_cache_hits(&self) -> u64 {
        self.lists.clusters.hits()
            + self.lists.cluster_by_id.hits()
            + self.lists.tenants.hits()
            + self.lists.providers.hits()
            + self.lists.templates.hits()
    }
}

/// `%needle%` for `LIKE … ESCAPE '\'`, lower-cased, with the pattern characters escaped.
pub(super) fn contains_pattern(needle: &str) -> String {
    let mut p = String::with_capacity(needle.len() + 2);
    p.push('%');
    for c in needle.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

pub(super) fn limit_offset(page: Page) -> (i64, i64) {
    (i64::from(page.limit()), i64::from(page.offset()))
}

/// Replaces the generic "already exists" of a unique violation with a message naming `what`.
pub(super) fn conflict_as(what: impl FnOnce() -> String) -> impl FnOnce(sqlx::Error) -> Error {
    move |e| match Error::from(e) {
        Error::Conflict(_) => Error::Conflict(what()),
        other => other,
    }
}

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    async fn ping(&self) -> Result<()> {
        on_pool!(self, p => sqlx::query("SELECT 1").execute(p).await.map(|_| ())?);
        Ok(())
    }

    async fn counts(&self) -> Result<Counts> {
        const SQL: &str = "SELECT (SELECT COUNT(*) FROM tenants), (SELECT COUNT(*) FROM users), \
             (SELECT COUNT(*) FROM audit_events)";
        let (t, u, a): (i64, i64, i64) = on_pool!(self, p => {
            sqlx::query_as(SQL).fetch_one(p).await?
        });
        let n = |v: i64| u64::try_from(v).unwrap_or_default();
        Ok(Counts {
            tenants: n(t),
            users: n(u),
            audit_events: n(a),
        })
    }

    async fn refresh_statistics(&self) -> Result<Vec<String>> {
        self.refresh_planner_statistics().await
    }

    async fn take_job_lease(
        &self,
        job: &str,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool> {
        self.lease_job(job, owner, now, until).await
    }

    async fn drop_job_leases(&self, owner: &str) -> Result<()> {
        self.release_jobs(owner).await
    }

    async fn close(&self) {
        on_pool!(self, p => p.close().await);
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("Team"), "%team%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
