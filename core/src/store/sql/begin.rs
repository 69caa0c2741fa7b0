//! Beginning a transaction whole, whatever happens to the caller meanwhile.
//!
//! A request's future is dropped when its client disconnects, and the engine aborts its
//! operation tasks when it stops. sqlx 0.8 does not survive that drop at one point of
//! `begin`: on SQLite, between the acknowledged `BEGIN IMMEDIATE` and its check that the
//! connection is in a transaction; on Postgres, between sending `BEGIN` and reading the
//! answer. No `Transaction` exists yet to roll back, so the connection goes back to the pool
//! inside an open transaction: on SQLite it holds the write lock, and every other write waits
//! out the busy timeout and fails ("database is locked"); on either, statements that later run
//! on that connection outside a transaction are never committed. Seen in CI as a test's write
//! failing right after it stopped the engine.
//!
//! The `BEGIN` therefore runs on a task of its own: the caller may go away, the task still
//! ends with a `Transaction` (which rolls back when dropped unused) or an error.

use std::future::Future;

use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

use crate::{Error, Result};

/// A SQLite write transaction, holding the write lock from its start (see `in_tx!`).
pub(super) async fn sqlite(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>> {
    let pool = pool.clone();
    whole(async move { pool.begin_with("BEGIN IMMEDIATE").await }).await
}

/// A Postgres transaction.
pub(super) async fn postgres(pool: &PgPool) -> Result<Transaction<'static, Postgres>> {
    let pool = pool.clone();
    whole(async move { pool.begin().await }).await
}

async fn whole<T: Send + 'static>(
    begin: impl Future<Output = std::result::Result<T, sqlx::Error>> + Send + 'static,
) -> Result<T> {
    match tokio::spawn(begin).await {
        Ok(begun) => Ok(begun?),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime that shuts down cancels the task.
        Err(_) => Err(Error::Store(sqlx::Error::PoolClosed)),
    }
}
