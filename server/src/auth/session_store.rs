//! tower-sessions storage in KQueen's own database, so that several portal replicas on one
//! database share sessions.
//!
//! Sessions expire after a period of inactivity, so tower-sessions saves the session at the
//! end of every request to push its expiry forward. Most requests change nothing else: a
//! save whose data equals what this process last read or wrote for that session, and whose
//! expiry moves less than [`REFRESH_AFTER_SECONDS`], is skipped instead of rewriting the row.
//! An idle session may therefore end up to that long before its nominal idle timeout.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kqueen_core::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, ExpiredDeletion, Result};
use tower_sessions::SessionStore;

/// How far a session's expiry may lag behind before an otherwise unchanged session is
/// written again.
pub const REFRESH_AFTER_SECONDS: i64 = 60;

/// Sessions whose stored state this process remembers, at most (then it starts afresh).
const MAX_KNOWN: usize = 100_000;

type Data = HashMap<String, serde_json::Value>;

#[derive(Clone)]
pub struct DbSessionStore {
    store: Arc<dyn Store>,
    /// What the database holds for recently seen sessions: data and expiry (unix seconds).
    known: Arc<Mutex<HashMap<Id, (Data, i64)>>>,
}

impl DbSessionStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            known: Arc::default(),
        }
    }

    fn known(&self) -> MutexGuard<'_, HashMap<Id, (Data, i64)>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, id: Id, data: Data, expires: i64) {
        let mut known = self.known();
        if known.len() >= MAX_KNOWN {
            known.clear();
        }
        known.insert(id, (data, expires));
    }

    /// True when the database already holds `record` but for an expiry less than
    /// [`REFRESH_AFTER_SECONDS`] older.
    fn unchanged(&self, record: &Record, expires: i64) -> bool {
        self.known().get(&record.id).is_some_and(|(data, stored)| {
            *data == record.data && (*stored..*stored + REFRESH_AFTER_SECONDS).contains(&expires)
        })
    }
}

impl std::fmt::Debug for DbSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DbSessionStore")
    }
}

fn backend(e: kqueen_core::Error) -> Error {
    Error::Backend(e.to_string())
}

fn expiry(record: &Record) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp(record.expiry_date.unix_timestamp(), 0)
        .ok_or_else(|| Error::Encode("expiry out of range".into()))
}

#[async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> Result<()> {
        // A fresh random id; on the (astronomically unlikely) clash, draw another.
        while self
            .store
            .session_load(&record.id.to_string(), Utc::now())
            .await
            .map_err(backend)?
            .is_some()
        {
            record.id = Id::default();
        }
        self.save(record).await
    }

    async fn save(&self, record: &Record) -> Result<()> {
        let expires = expiry(record)?;
        if self.unchanged(record, expires.timestamp()) {
            return Ok(());
        }
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        self.store
            .session_save(&record.id.to_string(), &data, expires)
            .await
            .map_err(backend)?;
        self.remember(record.id, record.data.clone(), expires.timestamp());
        Ok(())
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        let loaded = self
            .store
            .session_load(&id.to_string(), Utc::now())
            .await
            .map_err(backend)?;
        let Some((data, expires_at)) = loaded else {
            return Ok(None);
        };
        let data: Data = serde_json::from_str(&data).map_err(|e| Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp())
            .map_err(|e| Error::Decode(e.to_string()))?;
        self.remember(*id, data.clone(), expires_at.timestamp());
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        self.known().remove(id);
        self.store
            .session_delete(&id.to_string())
            .await
            .map_err(backend)
    }
}

#[async_trait]
impl ExpiredDeletion for DbSessionStore {
    async fn delete_expired(&self) -> Result<()> {
        let n = self
            .store
            .sessions_purge_expired(Utc::now())
            .await
            .map_err(backend)?;
        if n > 0 {
            tracing::debug!(sessions = n, "expired sessions deleted");
        }
        let now = Utc::now().timestamp();
        self.known().retain(|_, (_, expires)| *expires > now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kqueen_testkit::TestDatabase;

    fn record(id: Id, user: &str, expires: i64) -> Record {
        Record {
            id,
            data: [("kq.user".to_owned(), serde_json::json!(user))].into(),
            expiry_date: time::OffsetDateTime::from_unix_timestamp(expires).expect("valid"),
        }
    }

    async fn stored_expiry(store: &DbSessionStore, id: Id) -> i64 {
        // A second store (another process) reads what the database holds.
        let other = DbSessionStore::new(store.store.clone());
        let loaded = other.load(&id).await.expect("load").expect("present");
        loaded.expiry_date.unix_timestamp()
    }

    #[tokio::test]
    async fn unchanged_sessions_are_rewritten_only_when_their_expiry_moved_a_minute() {
        let db = TestDatabase::sqlite();
        let sessions = DbSessionStore::new(Arc::new(db.connect().await));
        let id = Id::default();
        let t = Utc::now().timestamp() + 3600;
        // Saves `user`'s session expiring at `at`, then checks what the database holds.
        let save = |user: &'static str, at: i64, expect: i64, why: &'static str| {
            let sessions = &sessions;
            async move {
                sessions.save(&record(id, user, at)).await.expect("save");
                assert_eq!(stored_expiry(sessions, id).await, expect, "{why}");
            }
        };
        save("amy", t, t, "first save").await;
        save("amy", t + 30, t, "skipped: 30 s later").await;
        save("amy", t + 61, t + 61, "written").await;
        save("bob", t + 62, t + 62, "changed data: written").await;
        sessions.delete(&id).await.expect("delete");
        save("bob", t + 62, t + 62, "written after a delete").await;
    }
}
