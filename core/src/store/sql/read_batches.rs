//! Reads by key that arrive while one is in flight, sent together as the next one.
//!
//! Every portal page starts by loading its session: one small query per request, and on
//! SQLite each query is two hand-offs to the connection's thread and back (the query, then
//! sqlx's test of the connection handed back to the pool), each a task switch the kernel
//! charges to both threads. Under load many requests load sessions at once; here they
//! share one query (`WHERE id IN (…)`) instead of queueing for the pool one by one.
//!
//! A batch is sent only after every request in it began waiting, so each request sees what
//! the database held after its call began (a write committed before the call is seen), as
//! if it had sent its own query: batching changes the number of queries, never what they
//! answer. While a batch is in flight the next one collects the requests that arrive;
//! a request alone is sent at once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::{Error, Result};

/// Keys one batch reads at most (later requests open the next batch).
pub(super) const MAX_KEYS: usize = 64;

/// Batched reads of one kind of row, by key.
pub(super) struct ReadBatches<V> {
    /// Held while a batch is in flight.
    in_flight: tokio::sync::Mutex<()>,
    /// The batch requests arriving now join (not sent yet).
    next: Mutex<Option<Arc<Batch<V>>>>,
    queries: AtomicU64,
}

struct Batch<V> {
    /// The keys of the requests that joined; fixed once the batch is taken out of `next`.
    keys: Mutex<Vec<String>>,
    answer: tokio::sync::OnceCell<std::result::Result<Arc<HashMap<String, V>>, String>>,
}

impl<V> Default for ReadBatches<V> {
    fn default() -> Self {
        Self {
            in_flight: tokio::sync::Mutex::default(),
            next: Mutex::default(),
            queries: AtomicU64::new(0),
        }
    }
}

impl<V> std::fmt::Debug for ReadBatches<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBatches")
            .field("queries", &self.queries.load(Ordering::Relaxed))
            .finish()
    }
}

impl<V: Clone> ReadBatches<V> {
    /// The row of `key`, as `query` reads the rows of the keys it is given (distinct, at
    /// most [`MAX_KEYS`]; rows of absent keys are simply not in its answer), sent after
    /// this call began.
    pub(super) async fn read<F, Fut>(&self, key: &str, query: F) -> Result<Option<V>>
    where
        F: FnOnce(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashMap<String, V>>>,
    {
        let batch = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            let open = next.as_ref().filter(|b| b.lock_keys().len() < MAX_KEYS);
            let batch = match open {
                Some(b) => b.clone(),
                None => {
                    let b = Arc::new(Batch {
                        keys: Mutex::default(),
                        answer: tokio::sync::OnceCell::new(),
                    });
                    *next = Some(b.clone());
                    b
                }
            };
            let mut keys = batch.lock_keys();
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
            drop(keys);
            batch
        };
        // One member of the batch sends it (another takes over if that one is cancelled).
        let answer = batch
            .answer
            .get_or_init(|| async {
                let _flight = self.in_flight.lock().await;
                // Close the batch: whoever arrives from now on joins the next one.
                let keys = {
                    let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
                    if next.as_ref().is_some_and(|b| Arc::ptr_eq(b, &batch)) {
                        *next = None;
                    }
                    batch.lock_keys().clone()
                };
                self.queries.fetch_add(1, Ordering::Relaxed);
                query(keys).await.map(Arc::new).map_err(|e| e.to_string())
            })
            .await;
        match answer {
            Ok(rows) => Ok(rows.get(key).cloned()),
            Err(e) => Err(Error::Backend(e.clone())),
        }
    }

    /// Queries sent so far.
    #[cfg(test)]
    pub(super) fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }
}

impl<V> Batch<V> {
    fn lock_keys(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `first, …` placeholders for `keys` (from `$first`), padded by repeating the last key to
/// the next power of two: a handful of statement shapes for any batch, so the connections'
/// statement caches keep them all.
pub(super) fn placeholders(keys: &mut Vec<String>, first: usize) -> String {
    let padded = keys.len().max(1).next_power_of_two();
    if let Some(last) = keys.last().cloned() {
        keys.resize(padded, last);
    }
    (first..first + keys.len())
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;
    use tokio::sync::Notify;

    type Reads = Arc<ReadBatches<i64>>;

    /// Reads `key` through `batches`; the query answers every key it is given with the
    /// value of `version` when it was sent, after `release` lets it.
    fn read(
        batches: &Reads,
        key: &'static str,
        version: &Arc<AtomicI64>,
        release: &Arc<Notify>,
    ) -> tokio::task::JoinHandle<Result<Option<i64>>> {
        let (batches, version, release) = (batches.clone(), version.clone(), release.clone());
        tokio::spawn(async move {
            batches
                .read(key, |keys| async move {
                    let v = version.load(Ordering::SeqCst);
                    release.notified().await;
                    Ok(keys
                        .into_iter()
                        .filter(|k| k != "absent")
                        .map(|k| (k, v))
                        .collect())
                })
                .await
        })
    }

    async fn until(what: impl Fn() -> bool) {
        for _ in 0..10_000 {
            if what() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("never happened");
    }

    /// Requests that arrive while a read is in flight share the next one, and see what was
    /// written before they arrived; none shares a read sent before it arrived.
    #[tokio::test]
    async fn requests_arriving_during_a_read_share_the_next_one_and_see_earlier_writes() {
        let batches = Reads::default();
        let version = Arc::new(AtomicI64::new(1));
        let release = Arc::new(Notify::new());
        let first = read(&batches, "a", &version, &release);
        until(|| batches.queries() == 1).await;
        // A write commits while the first read is in flight; four requests arrive after it.
        version.store(2, Ordering::SeqCst);
        let later: Vec<_> = ["a", "b", "c", "absent"]
            .into_iter()
            .map(|k| read(&batches, k, &version, &release))
            .collect();
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            batches.queries(),
            1,
            "the later requests wait for the next read"
        );
        release.notify_one();
        assert_eq!(first.await.expect("joined").expect("read"), Some(1));
        until(|| batches.queries() == 2).await;
        release.notify_one();
        let answers: Vec<Option<i64>> = futures::future::join_all(later)
            .await
            .into_iter()
            .map(|r| r.expect("joined").expect("read"))
            .collect();
        assert_eq!(
            answers,
            [Some(2), Some(2), Some(2), None],
            "they see the write"
        );
        assert_eq!(batches.queries(), 2, "one query answered all four");
    }

    #[tokio::test]
    async fn a_failed_query_fails_every_request_of_its_batch_and_not_the_next() {
        let batches = ReadBatches::<i64>::default();
        let failed = batches
            .read("a", |_| async { Err(Error::Backend("down".into())) })
            .await;
        assert!(matches!(failed, Err(Error::Backend(e)) if e.contains("down")));
        let ok = batches
            .read("a", |keys| async move {
                Ok(keys.into_iter().map(|k| (k, 7)).collect())
            })
            .await;
        assert_eq!(ok.expect("read"), Some(7));
    }

    /// The request that sends a batch may be cancelled (its client went away): another
    /// member of the batch sends it instead.
    #[tokio::test]
    async fn a_cancelled_sender_hands_the_batch_to_another_member() {
        let batches = Reads::default();
        let version = Arc::new(AtomicI64::new(1));
        let release = Arc::new(Notify::new());
        let blocker = read(&batches, "x", &version, &release);
        until(|| batches.queries() == 1).await;
        let sender = read(&batches, "a", &version, &release);
        let other = read(&batches, "b", &version, &release);
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        sender.abort();
        release.notify_one();
        assert_eq!(blocker.await.expect("joined").expect("read"), Some(1));
        until(|| batches.queries() == 2).await;
        release.notify_one();
        assert_eq!(other.await.expect("joined").expect("read"), Some(1));
    }

    #[test]
    fn placeholders_pad_to_a_power_of_two_with_the_last_key() {
        let mut keys: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(placeholders(&mut keys, 2), "$2, $3, $4, $5");
        assert_eq!(keys, ["a", "b", "c", "c"]);
        let mut one = vec!["a".to_owned()];
        assert_eq!(placeholders(&mut one, 1), "$1");
    }
}
