//! How many portal pages render at once. A page (its data reads and its HTML, rendered
//! whole on the server) is the portal's most expensive request. Under a burst, rendering every
//! page at once shares the cores between all of them and they finish in no particular order:
//! at 64 connections on 2 cores the slowest hundredth took 1.75–2.05× the median (1.4–1.7×
//! with 4 to 16 slots). Past the bound, pages wait for a slot in the order they came (tokio's
//! semaphore is fair), which also bounds the memory that renders in progress hold. Only page
//! loads (`GET` of a portal route) wait here: the API, server functions, downloads, health and
//! metrics never do.
//! Figures: README, "Page slots".

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use kqueen_core::store::Backend;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Slots per CPU core when the setting leaves it open, by store. On SQLite (in the process)
/// a page waits little for its reads: on 2 cores 4 to 16 slots in all (2 to 8 per core)
/// measured the same and 2 left cores idle, so 4 per core. On PostgreSQL a page holds its
/// slot while the database's own processes, sharing the cores, answer it: 8 slots on 2 cores
/// were full while the cores idled, and 32 (16 per core) served 10–38 % more pages per
/// second in both alternated pairs, at less CPU per page, with a lower p99 in three of the
/// four page cases (README, "Page slots").
pub fn slots_per_core(backend: Backend) -> usize {
    match backend {
        Backend::Sqlite => 4,
        Backend::Postgres => 16,
    }
}

/// The bound on concurrent page renders of this process, and who waits for it.
#[derive(Clone, Debug)]
pub struct PageSlots {
    slots: Arc<Semaphore>,
    size: usize,
    waiting: Gauge,
    rendering: Gauge,
}

impl PageSlots {
    /// `size` slots (at least one).
    pub fn new(size: usize) -> Self {
        let size = size.max(1);
        Self {
            slots: Arc::new(Semaphore::new(size)),
            size,
            waiting: Gauge::default(),
            rendering: Gauge::default(),
        }
    }

    /// [`slots_per_core`] slots for the store, for each core this process may use.
    pub fn per_core(backend: Backend) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new(cores * slots_per_core(backend))
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Page loads waiting for a slot now (`kqueen_page_renders_waiting`).
    pub fn waiting(&self) -> &Gauge {
        &self.waiting
    }

    /// Page loads holding a slot now (`kqueen_page_renders`).
    pub fn rendering(&self) -> &Gauge {
        &self.rendering
    }

    /// Waits for a slot, counted as waiting until it has one (also when the request is
    /// dropped while it waits).
    pub async fn take(&self) -> Slot {
        let _counted = Counted::new(&self.waiting);
        // The semaphore is never closed: an error cannot happen, and would only mean no bound.
        let permit = self.slots.clone().acquire_owned().await.ok();
        Slot {
            _permit: permit,
            _counted: Counted::new(&self.rendering),
        }
    }
}

/// A held slot: released (and no longer counted) when dropped.
pub struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    _counted: Counted,
}

/// One more on a gauge while alive.
struct Counted(Gauge);

impl Counted {
    fn new(gauge: &Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The middleware on the portal's routes: a page load renders once it holds a slot; server
/// functions (posted to the same router) pass straight through.
pub async fn admit(State(slots): State<PageSlots>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET {
        return next.run(req).await;
    }
    let _slot = slots.take().await;
    next.run(req).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn pages_past_the_bound_wait_in_order_and_are_counted() {
        let slots = PageSlots::new(1);
        let first = slots.take().await;
        assert_eq!((slots.rendering().get(), slots.waiting().get()), (1, 0));

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut waiters = Vec::new();
        for n in 0..3 {
            let (queued, tx) = (slots.clone(), tx.clone());
            waiters.push(tokio::spawn(async move {
                let _slot = queued.take().await;
                tx.send(n).unwrap();
            }));
            // Each waiter queues before the next one starts.
            while slots.waiting().get() < n + 1 {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(slots.waiting().get(), 3);
        assert!(rx.try_recv().is_err(), "a page rendered past the bound");

        drop(first);
        for w in waiters {
            w.await.unwrap();
        }
        let order: Vec<i64> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            order,
            [0, 1, 2],
            "pages did not render in the order they came"
        );
        assert_eq!((slots.rendering().get(), slots.waiting().get()), (0, 0));
    }

    #[tokio::test]
    async fn a_page_dropped_while_waiting_is_no_longer_counted() {
        let slots = PageSlots::new(1);
        let held = slots.take().await;
        let waiting = tokio::time::timeout(Duration::from_millis(20), slots.take()).await;
        assert!(waiting.is_err(), "a second page got the only slot");
        assert_eq!(slots.waiting().get(), 0);
        drop(held);
        let _again = slots.take().await;
        assert_eq!((slots.rendering().get(), slots.waiting().get()), (1, 0));
    }

    #[test]
    fn a_bound_of_zero_still_renders_one_page_at_a_time() {
        assert_eq!(PageSlots::new(0).size(), 1);
        for backend in [Backend::Sqlite, Backend::Postgres] {
            assert!(PageSlots::per_core(backend).size() >= slots_per_core(backend));
        }
        assert!(slots_per_core(Backend::Postgres) > slots_per_core(Backend::Sqlite));
    }
}
