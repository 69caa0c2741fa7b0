//! Per-process counts of work by outcome, for `/metrics` (the server renders them as
//! Prometheus counters; they start at zero with each process, as counters do).

use std::sync::atomic::{AtomicU64, Ordering};

/// How many times something succeeded and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub ok: u64,
    pub failed: u64,
}

/// A pair of monotonic counters.
#[derive(Debug, Default)]
pub struct OutcomeCounter {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl OutcomeCounter {
    pub fn record(&self, ok: bool) {
        let counter = if ok { &self.ok } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records `result`'s outcome and hands it back.
    pub fn track<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
        self.record(result.is_ok());
        result
    }

    pub fn get(&self) -> Outcomes {
        Outcomes {
            ok: self.ok.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_counted_apart() {
        let c = OutcomeCounter::default();
        c.record(true);
        assert_eq!(c.track::<(), &str>(Err("no")), Err("no"));
        assert_eq!(c.track::<u8, &str>(Ok(1)), Ok(1));
        assert_eq!(c.get(), Outcomes { ok: 2, failed: 1 });
    }
}
