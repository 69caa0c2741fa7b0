//! Short-lived, in-process caches of what authenticates a request: resolved identities (user,
//! operator flag, memberships) and API tokens by hash, so that a burst of requests by one
//! user or token does not read the same rows for each. Entries live `ttl` (default 2 s);
//! every change of users, memberships or tokens made through this process empties the
//! matching cache at once, and changes made by another process sharing the database are seen
//! within `ttl`. Authorization itself is still checked on every use case.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::identity::Identity;
use crate::token::ApiToken;

/// Most entries kept; beyond that a cache starts again empty.
const MAX_ENTRIES: usize = 10_000;

/// Identities by user id (`None`: the user is gone or disabled).
pub(crate) type IdentityCache = TtlCache<Uuid, Option<Identity>>;
/// Stored API tokens by the hash of their secret (only tokens that exist).
pub(crate) type TokenCache = TtlCache<String, ApiToken>;

type Entries<K, V> = HashMap<K, (Instant, V)>;

pub(crate) struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<Entries<K, V>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(2);

    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<K, V>> {
        // A panic while holding the lock leaves only cache entries behind: keep using them.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached value for `key`, while fresh.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.lock();
        let (at, value) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    pub(crate) fn put(&self, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, (Instant::now(), value));
    }

    /// Replaces the value of a cached `key` and keeps its age (no effect when absent).
    pub(crate) fn update(&self, key: &K, value: V) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.1 = value;
        }
    }

    /// Forgets everything: what it caches changed.
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str) -> Identity {
        Identity {
            user_id: Uuid::now_v7(),
            username: name.to_owned(),
            email: None,
            display_name: None,
            is_operator: false,
            memberships: Vec::new(),
        }
    }

    #[test]
    fn entries_live_for_the_ttl_and_clear_empties() {
        let cache = IdentityCache::new(Duration::from_millis(50));
        let amy = identity("amy");
        let id = amy.user_id;
        assert_eq!(cache.get(&id), None);
        cache.put(id, Some(amy.clone()));
        assert_eq!(cache.get(&id), Some(Some(amy.clone())));
        cache.clear();
        assert_eq!(cache.get(&id), None);
        cache.update(&id, None);
        assert_eq!(cache.get(&id), None, "update adds nothing");
        cache.put(id, None);
        assert_eq!(cache.get(&id), Some(None), "gone users are cached too");
        cache.update(&id, Some(amy.clone()));
        assert_eq!(cache.get(&id), Some(Some(amy.clone())), "updated");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(&id), None, "expired");
        let off = IdentityCache::new(Duration::ZERO);
        off.put(id, Some(amy));
        assert_eq!(off.get(&id), None, "a zero ttl turns the cache off");
    }
}
