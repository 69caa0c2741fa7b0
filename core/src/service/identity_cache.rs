//! A short-lived, in-process cache of resolved identities (user, operator flag, memberships),
//! so that a burst of requests by one user or token does not read the same three rows for
//! each. Entries live `ttl` (default 2 s); every change of users or memberships made through
//! this process empties the cache at once, and changes made by another process sharing the
//! database are seen within `ttl`. Authorization itself is still checked on every use case.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::identity::Identity;

/// Most identities kept; beyond that the cache starts again empty.
const MAX_ENTRIES: usize = 10_000;

pub(crate) struct IdentityCache {
    ttl: Duration,
    entries: Mutex<HashMap<Uuid, (Instant, Option<Identity>)>>,
}

impl IdentityCache {
    pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(2);

    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (Instant, Option<Identity>)>> {
        // A panic while holding the lock leaves only cache entries behind: keep using them.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached identity of `user_id` (`Some(None)`: known to be disabled or gone).
    pub(crate) fn get(&self, user_id: Uuid) -> Option<Option<Identity>> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.lock();
        let (at, identity) = entries.get(&user_id)?;
        (at.elapsed() < self.ttl).then(|| identity.clone())
    }

    pub(crate) fn put(&self, user_id: Uuid, identity: Option<Identity>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(user_id, (Instant::now(), identity));
    }

    /// Forgets everything: users or memberships changed.
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
        assert_eq!(cache.get(id), None);
        cache.put(id, Some(amy.clone()));
        assert_eq!(cache.get(id), Some(Some(amy.clone())));
        cache.clear();
        assert_eq!(cache.get(id), None);
        cache.put(id, None);
        assert_eq!(cache.get(id), Some(None), "gone users are cached too");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(id), None, "expired");
        let off = IdentityCache::new(Duration::ZERO);
        off.put(id, Some(amy));
        assert_eq!(off.get(id), None, "a zero ttl turns the cache off");
    }
}
