//! tower-sessions storage in KQueen's own database, so that several portal replicas on one
//! database share sessions.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kqueen_core::store::Store;
use std::sync::Arc;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, ExpiredDeletion, Result};
use tower_sessions::SessionStore;

#[derive(Clone)]
pub struct DbSessionStore {
    store: Arc<dyn Store>,
}

impl DbSessionStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
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
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        self.store
            .session_save(&record.id.to_string(), &data, expiry(record)?)
            .await
            .map_err(backend)
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
        let data = serde_json::from_str(&data).map_err(|e| Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp())
            .map_err(|e| Error::Decode(e.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
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
        Ok(())
    }
}
