//! The request's context (what the server provides to every request: the domain, the
//! request's parts, the response options, ...), read without Leptos' owner-drop deadlock.
//! `get` clones a value as Leptos' `use_context` does (which is its `with_context` and a
//! clone); `with` borrows it.
//!
//! Leptos (reactive_graph 0.2) finds a context value by walking from the current owner up
//! its parents, holding the current owner's read lock and a strong handle of each parent on
//! the way. A page's data loads run as tasks of their own; when the browser goes away
//! mid-page, the request's root owner is dropped by another thread, and the walk's handle can
//! be the last one. Dropping it there cleans up the root's children, down to the owner whose
//! read lock the walk still holds: the worker thread waits for itself forever (seen under the
//! page bench: one of two workers lost for good, and a server that never exited on SIGTERM).
//!
//! Here every owner from the current one up to the root is held first and let go only after
//! the walk, so the last handle of an owner is never dropped under a lock. Read the context
//! only through this module: `clippy.toml` refuses Leptos' own readers elsewhere.
//! (`leptos_axum::redirect` reads the context Leptos' way; the app calls it only from
//! posted server functions and the page stream, which hold the request's root themselves.)

#![allow(clippy::disallowed_methods)]

use leptos::prelude::Owner;

/// The context value of type `T`, found as Leptos finds it (the nearest owner providing one).
pub fn get<T: Clone + 'static>() -> Option<T> {
    with::<T, T>(T::clone)
}

/// `f` applied to the context value of type `T`, borrowed where it is (nothing is cloned).
/// `f` runs under the owners' read locks:
/// it must not read the context itself (a cleanup waiting to write on another thread would
/// make that second read wait behind it).
pub fn with<T: 'static, R>(f: impl FnOnce(&T) -> R) -> Option<R> {
    let held = ancestors();
    let found = leptos::prelude::with_context::<T, R>(f);
    drop(held);
    found
}

/// Strong handles of the current owner and every ancestor it still has, held for as long as
/// the vector lives. Each step reads one owner's parent and lets go of that owner's lock
/// before the next.
fn ancestors() -> Vec<Owner> {
    let mut held = Vec::new();
    let mut next = Owner::current();
    while let Some(owner) = next {
        next = owner.parent();
        held.push(owner);
    }
    held
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use leptos::prelude::provide_context;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// A context value whose copy lets go of the root owner's only handle outside the walk,
    /// as a request ending on another thread would at that instant.
    struct DropsRoot(Arc<Mutex<Option<Owner>>>);

    impl Clone for DropsRoot {
        fn clone(&self) -> Self {
            let root = self.0.lock().unwrap().take();
            drop(root);
            Self(self.0.clone())
        }
    }

    /// Reads `DropsRoot` with `read` from a child of the root that provides it, on a thread of
    /// its own: whether it found the value, or Timeout when it hung (Disconnected: it panicked).
    fn read_while_root_ends(
        read: fn() -> Option<DropsRoot>,
        wait: Duration,
    ) -> Result<bool, mpsc::RecvTimeoutError> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let root = Owner::new();
            let slot = Arc::new(Mutex::new(None));
            root.with(|| provide_context(DropsRoot(slot.clone())));
            let child = root.child();
            *slot.lock().unwrap() = Some(root);
            let found = child.with(read).is_some();
            let _ = tx.send(found);
        });
        rx.recv_timeout(wait)
    }

    #[test]
    fn a_root_dropped_during_the_read_neither_hangs_nor_loses_the_value() {
        let got = read_while_root_ends(get::<DropsRoot>, Duration::from_secs(30));
        assert_eq!(
            got,
            Ok(true),
            "the read hung (Timeout), panicked or found nothing"
        );
        let borrowed = read_while_root_ends(
            || with::<DropsRoot, _>(Clone::clone),
            Duration::from_secs(30),
        );
        assert_eq!(
            borrowed,
            Ok(true),
            "the borrowing read hung (Timeout), panicked or found nothing"
        );
    }

    /// The scenario above does hang Leptos' own reader (so it tests what this module is for).
    /// When this fails, Leptos no longer drops an owner under its lock: this module's holding
    /// can go.
    #[test]
    fn leptos_own_reader_hangs_in_that_scenario() {
        let got = read_while_root_ends(
            leptos::prelude::use_context::<DropsRoot>,
            Duration::from_secs(3),
        );
        assert_eq!(
            got,
            Err(mpsc::RecvTimeoutError::Timeout),
            "Leptos' use_context came back or panicked"
        );
    }

    #[test]
    fn nothing_provided_is_none_and_the_nearest_value_wins() {
        let root = Owner::new();
        root.with(|| provide_context(1u32));
        let child = root.child();
        child.with(|| provide_context(2u32));
        assert_eq!(child.with(get::<u32>), Some(2));
        assert_eq!(root.with(get::<u32>), Some(1));
        assert_eq!(child.with(get::<String>), None);
        assert_eq!(child.with(|| with::<u32, _>(|n| n + 1)), Some(3));
    }
}
