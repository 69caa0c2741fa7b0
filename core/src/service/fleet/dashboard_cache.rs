//! The fleet dashboard's answers, kept for a few seconds.
//!
//! Every answer reads every cluster of its scope (counts by state, provider and version,
//! node totals, which clusters need attention): at 10,000 clusters tens of milliseconds of
//! database work, asked for by every open dashboard each time it refreshes. What it
//! summarises, the inventory, is as old as the last sync round (minutes) anyway, so an answer
//! is reused by the requests with the same scope, filter and page while all of these hold:
//! - no write to clusters, tenants or memberships has been committed since it was read, by
//!   any replica (the store's [`clusters_version`](crate::store::FleetClusterStore), read
//!   before the answer): a cluster created, deleted or changing state shows at once;
//! - no inventory sync of this process has ended since (a requested sync, a cluster's first
//!   sync, a background round): what this process learns shows at once, another replica's
//!   background syncs within `max_age`;
//! - it is younger than `max_age` (0: nothing is kept).
//!
//! Requests that miss together share one reading: the first reads, the others wait for its
//! answer, so an expiry under load costs one reading, not one per request in flight.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use crate::Result;

/// Answers kept at most (scopes × filters × pages people look at within `max_age`).
const CAPACITY: usize = 256;

/// Answers by key (scope, filter, page), each with what it was read under.
pub(super) struct AnswerCache<V> {
    max_age: Duration,
    slots: Mutex<Slots<V>>,
    /// This process's inventory writes that answers must not hide (see the module doc).
    generation: AtomicU64,
    readings: AtomicU64,
}

struct Slots<V> {
    by_key: HashMap<String, Slot<V>>,
    /// Slots made so far: the order that evicts the oldest.
    made: u64,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
            made: 0,
        }
    }
}

struct Slot<V> {
    version: i64,
    generation: u64,
    born: Instant,
    order: u64,
    answer: Arc<OnceCell<Arc<V>>>,
}

impl<V> std::fmt::Debug for AnswerCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerCache")
            .field("max_age", &self.max_age)
            .field("answers", &self.lock().by_key.len())
            .finish()
    }
}

impl<V> AnswerCache<V> {
    pub(super) fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            slots: Mutex::default(),
            generation: AtomicU64::new(0),
            readings: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots<V>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers read before now are not served again (this process wrote inventory).
    pub(super) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// How many times an answer was read rather than reused.
    #[cfg(test)]
    fn readings(&self) -> u64 {
        self.readings.load(Ordering::Relaxed)
    }

    /// The answer under `key`: kept, when it was read at `version` (the store's clusters
    /// version, read by the caller before calling) and is still current; else read by `read`
    /// (once for every request waiting on the same key).
    pub(super) async fn get<F, Fut>(&self, key: String, version: i64, read: F) -> Result<Arc<V>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let read = || async {
            self.readings.fetch_add(1, Ordering::Relaxed);
            read().await.map(Arc::new)
        };
        if self.max_age.is_zero() {
            return read().await;
        }
        let generation = self.generation.load(Ordering::Acquire);
        let now = Instant::now();
        let answer = {
            let mut slots = self.lock();
            match slots.by_key.get(&key) {
                Some(s)
                    if s.version == version && s.generation == generation && self.young(s, now) =>
                {
                    Some(s.answer.clone())
                }
                // Kept under a later version or generation than this request saw: this
                // request's answer would be older; read it without keeping it.
                Some(s) if s.version > version || s.generation > generation => None,
                _ => {
                    if slots.by_key.len() >= CAPACITY && !slots.by_key.contains_key(&key) {
                        self.make_room(&mut slots.by_key, now);
                    }
                    let answer = Arc::new(OnceCell::new());
                    slots.made += 1;
                    let order = slots.made;
                    slots.by_key.insert(
                        key,
                        Slot {
                            version,
                            generation,
                            born: now,
                            order,
                            answer: answer.clone(),
                        },
                    );
                    Some(answer)
                }
            }
        };
        match answer {
            // A reading that fails leaves the cell empty: the next waiter reads itself.
            Some(cell) => cell.get_or_try_init(read).await.cloned(),
            None => read().await,
        }
    }

    fn young(&self, slot: &Slot<V>, now: Instant) -> bool {
        now.saturating_duration_since(slot.born) < self.max_age
    }

    /// Drops the answers too old to be served, then the oldest one if none was.
    fn make_room(&self, slots: &mut HashMap<String, Slot<V>>, now: Instant) {
        slots.retain(|_, s| self.young(s, now));
        if slots.len() >= CAPACITY {
            let oldest = slots
                .iter()
                .min_by_key(|(_, s)| s.order)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                slots.remove(&k);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Error;

    fn cache(max_age: Duration) -> AnswerCache<u32> {
        AnswerCache::new(max_age)
    }

    async fn get(c: &AnswerCache<u32>, key: &str, version: i64, value: u32) -> u32 {
        *c.get(key.into(), version, || async move { Ok(value) })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn an_answer_is_reused_for_the_same_key_and_version_only() {
        let c = cache(Duration::from_secs(60));
        assert_eq!(get(&c, "a", 1, 10).await, 10);
        assert_eq!(get(&c, "a", 1, 11).await, 10);
        assert_eq!(get(&c, "b", 1, 20).await, 20);
        // A committed write to clusters: read again.
        assert_eq!(get(&c, "a", 2, 12).await, 12);
        assert_eq!(get(&c, "a", 2, 13).await, 12);
        assert_eq!(c.readings(), 3);
    }

    #[tokio::test]
    async fn this_process_s_inventory_writes_show_at_once() {
        let c = cache(Duration::from_secs(60));
        assert_eq!(get(&c, "a", 1, 10).await, 10);
        c.invalidate();
        assert_eq!(get(&c, "a", 1, 11).await, 11);
        assert_eq!(get(&c, "a", 1, 12).await, 11);
    }

    #[tokio::test]
    async fn answers_expire_and_max_age_zero_keeps_none() {
        let c = cache(Duration::from_millis(50));
        assert_eq!(get(&c, "a", 1, 10).await, 10);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(get(&c, "a", 1, 11).await, 11);
        let off = cache(Duration::ZERO);
        assert_eq!(get(&off, "a", 1, 10).await, 10);
        assert_eq!(get(&off, "a", 1, 11).await, 11);
    }

    #[tokio::test]
    async fn a_request_that_saw_an_older_version_never_replaces_a_newer_answer() {
        let c = cache(Duration::from_secs(60));
        assert_eq!(get(&c, "a", 5, 50).await, 50);
        // Read the version before the write committed: gets its own reading, not kept.
        assert_eq!(get(&c, "a", 4, 40).await, 40);
        assert_eq!(get(&c, "a", 5, 51).await, 50);
    }

    #[tokio::test]
    async fn requests_that_miss_together_share_one_reading() {
        let c = Arc::new(cache(Duration::from_secs(60)));
        let gate = Arc::new(tokio::sync::Notify::new());
        let mut tasks = Vec::new();
        for i in 0..16 {
            let (c, gate) = (c.clone(), gate.clone());
            tasks.push(tokio::spawn(async move {
                *c.get("a".into(), 1, || async move {
                    gate.notified().await;
                    Ok(i)
                })
                .await
                .unwrap()
            }));
        }
        // Let every task reach the cache, then release the one reading.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        gate.notify_one();
        let answers: Vec<u32> = futures::future::join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
        assert_eq!(c.readings(), 1);
    }

    #[tokio::test]
    async fn a_failed_reading_is_not_kept() {
        let c = cache(Duration::from_secs(60));
        let failed = c
            .get("a".into(), 1, || async {
                Err::<u32, _>(Error::Backend("down".into()))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(get(&c, "a", 1, 10).await, 10);
    }

    #[tokio::test]
    async fn a_full_cache_drops_the_oldest_answer() {
        let c = cache(Duration::from_secs(60));
        for i in 0..CAPACITY {
            get(&c, &format!("k{i}"), 1, 1).await;
        }
        get(&c, "new", 1, 2).await;
        assert_eq!(c.lock().by_key.len(), CAPACITY);
        assert!(!c.lock().by_key.contains_key("k0"));
        assert_eq!(get(&c, "k1", 1, 3).await, 1);
    }
}
