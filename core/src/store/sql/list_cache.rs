//! List pages kept in memory while the database says nothing they read has changed.
//!
//! The cluster list (and the tenant list beside it on the same pages) is what the portal
//! serves most: every member's Clusters page, auto-refreshing dashboards, scripts polling
//! `GET /api/v1/clusters`. Reading a page costs the database a join, a count and the
//! transfer of every row; the data changes rarely.
//!
//! The database keeps one counter, `list_version`, that triggers bump in the same
//! transaction as every write to `clusters`, `tenants` and `memberships` (see the
//! migration), and to the catalog (`providers`, `templates`, `template_tenants`). Rows by id
//! are kept the same way: providers, templates, and a cluster with its tenant's slug (what
//! every cluster page and cluster API call reads first). A page is stored with the version
//! read *before* the page itself: if the version is still the same later, no write has been
//! committed since that read, so the page read after it is still exactly what the database
//! holds. A request therefore asks the database one tiny question (the counter) and answers
//! from memory when it matches; a write by any process on the same database is visible to
//! the next request, as before.
//! This is the Kubernetes API server's watch cache serving lists at a resourceVersion, with
//! the database as the source of the version.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::read_batches::ReadBatches;
use crate::{Error, Result};

/// Pages kept per list. A page of 50 clusters is ~50 KB in memory.
const CAPACITY: usize = 128;

/// Pages of one list, by query key.
pub(super) struct ListCache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    /// Logical clock for least-recently-used eviction.
    clock: AtomicU64,
    hits: AtomicU64,
}

struct Entry<V> {
    version: i64,
    value: Arc<V>,
    used: u64,
}

impl<V> Default for ListCache<V> {
    fn default() -> Self {
        Self {
            entries: Mutex::default(),
            clock: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }
}

impl<V> std::fmt::Debug for ListCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListCache")
            .field("pages", &self.lock().len())
            .field("hits", &self.hits())
            .finish()
    }
}

impl<V> ListCache<V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry<V>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The page stored under `key` if it was read at `version`.
    pub(super) fn get(&self, key: &str, version: i64) -> Option<Arc<V>> {
        let mut entries = self.lock();
        let entry = entries.get_mut(key).filter(|e| e.version == version)?;
        entry.used = self.clock.fetch_add(1, Ordering::Relaxed);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(entry.value.clone())
    }

    /// Stores the page read after the database showed `version`, unless a page read at a
    /// later version is already there (a slow reader must not replace a newer page).
    pub(super) fn put(&self, key: String, version: i64, value: Arc<V>) {
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.lock();
        if entries.get(&key).is_some_and(|e| e.version > version) {
            return;
        }
        if entries.len() >= CAPACITY && !entries.contains_key(&key) {
            // Pages of older versions can never be served again; then the least recently used.
            entries.retain(|_, e| e.version >= version);
            if entries.len() >= CAPACITY {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(
            key,
            Entry {
                version,
                value,
                used,
            },
        );
    }

    /// Pages answered from memory so far.
    pub(super) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

/// Reads of the list version, coalesced: requests that arrive while a read is in flight
/// gather, and the next read answers all of them. A request never takes the answer of a read
/// sent before it arrived, so it still sees every write committed before it started; under
/// load the database answers one version query per round instead of one per request. The
/// batching is [`ReadBatches`]' (the session loads' too), with the one key there is.
#[derive(Debug, Default)]
pub(super) struct VersionReads(ReadBatches<i64>);

impl VersionReads {
    /// The version as `query` reads it, sent after this call began.
    pub(super) async fn read<F>(&self, query: impl FnOnce() -> F) -> Result<i64>
    where
        F: Future<Output = Result<i64>>,
    {
        let read = self
            .0
            .read("", |_| async move {
                Ok(HashMap::from([(String::new(), query().await?)]))
            })
            .await;
        let failed = |e: String| Error::Backend(format!("reading the list version: {e}"));
        match read {
            Ok(Some(version)) => Ok(version),
            Ok(None) => Err(failed("no answer".into())),
            Err(Error::Backend(e)) => Err(failed(e)),
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// Queries sent so far.
    #[cfg(test)]
    fn reads(&self) -> u64 {
        self.0.queries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_served_only_at_the_version_it_was_read_at() {
        let cache = ListCache::default();
        cache.put("a".into(), 3, Arc::new(vec![1]));
        assert_eq!(cache.get("a", 3).as_deref(), Some(&vec![1]));
        assert_eq!(cache.get("a", 4), None);
        assert_eq!(cache.get("b", 3), None);
        assert_eq!(cache.hits(), 1);
    }

    #[test]
    fn an_older_read_never_replaces_a_newer_page() {
        let cache = ListCache::default();
        cache.put("a".into(), 5, Arc::new("new"));
        cache.put("a".into(), 4, Arc::new("old"));
        assert_eq!(cache.get("a", 5).as_deref(), Some(&"new"));
        cache.put("a".into(), 6, Arc::new("newer"));
        assert_eq!(cache.get("a", 6).as_deref(), Some(&"newer"));
    }

    #[test]
    fn capacity_drops_stale_pages_then_the_least_recently_used() {
        let cache = ListCache::default();
        for i in 0..CAPACITY {
            cache.put(format!("k{i}"), 1, Arc::new(i));
        }
        // k0 used most recently: k1 is the least recently used.
        assert!(cache.get("k0", 1).is_some());
        cache.put("new".into(), 1, Arc::new(0));
        assert_eq!(cache.lock().len(), CAPACITY);
        let has = |k: &str| cache.lock().contains_key(k);
        assert!(has("k0") && has("new") && !has("k1"));
        // A newer version makes every older page useless: they go first.
        cache.put("newer".into(), 2, Arc::new(0));
        assert_eq!(cache.lock().len(), 1);
    }

    /// A read in flight is never shared with requests that arrive after it was sent; those
    /// arriving meanwhile share the next one.
    #[tokio::test]
    async fn version_reads_are_shared_only_by_requests_that_arrived_before_them() {
        use std::sync::atomic::AtomicI64;
        use tokio::sync::Notify;

        let reads = Arc::new(VersionReads::default());
        let version = Arc::new(AtomicI64::new(1));
        let release = Arc::new(Notify::new());
        let read = |reads: Arc<VersionReads>, version: Arc<AtomicI64>, release: Arc<Notify>| {
            tokio::spawn(async move {
                reads
                    .read(|| async move {
                        // The version is taken when the query is sent; the answer waits.
                        let v = version.load(Ordering::SeqCst);
                        release.notified().await;
                        Ok(v)
                    })
                    .await
            })
        };
        let first = read(reads.clone(), version.clone(), release.clone());
        while reads.reads() == 0 {
            tokio::task::yield_now().await;
        }
        // A write commits while the first read is in flight; three requests arrive after it.
        version.store(2, Ordering::SeqCst);
        let later: Vec<_> = (0..3)
            .map(|_| read(reads.clone(), version.clone(), release.clone()))
            .collect();
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            reads.reads(),
            1,
            "the later requests wait for the next read"
        );
        release.notify_one();
        assert_eq!(first.await.expect("joined").expect("read"), 1);
        while reads.reads() < 2 {
            tokio::task::yield_now().await;
        }
        release.notify_one();
        for r in later {
            assert_eq!(
                r.await.expect("joined").expect("read"),
                2,
                "they see the write"
            );
        }
        assert_eq!(reads.reads(), 2, "one read answered all three");
    }
}
