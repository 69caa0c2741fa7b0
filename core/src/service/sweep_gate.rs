//! Single flight for a background pass (the access sweep).

use std::sync::Arc;

/// Single flight for a background pass: requests that arrive while one runs ask for one more
/// pass after it (never several at once, never one lost).
#[derive(Debug, Default)]
pub(crate) struct SweepGate {
    running: std::sync::atomic::AtomicBool,
    again: std::sync::atomic::AtomicBool,
}

impl SweepGate {
    /// Runs `pass` on `runtime` now, or once more after the pass that is running.
    pub(crate) fn request<F, Fut>(self: &Arc<Self>, runtime: &tokio::runtime::Handle, pass: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        use std::sync::atomic::Ordering::SeqCst;
        self.again.store(true, SeqCst);
        if self.running.swap(true, SeqCst) {
            return;
        }
        let gate = self.clone();
        runtime.spawn(async move {
            loop {
                gate.again.store(false, SeqCst);
                pass().await;
                gate.running.store(false, SeqCst);
                // Asked meanwhile, and nobody else took over: one more pass.
                if !gate.again.load(SeqCst) || gate.running.swap(true, SeqCst) {
                    break;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    use super::SweepGate;

    #[tokio::test]
    async fn one_pass_at_a_time_and_one_more_for_requests_meanwhile() {
        let gate = Arc::new(SweepGate::default());
        let (passes, busy, overlap) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let pass = {
            let (passes, busy, overlap, release) = (
                passes.clone(),
                busy.clone(),
                overlap.clone(),
                release.clone(),
            );
            move || {
                let (passes, busy, overlap, release) = (
                    passes.clone(),
                    busy.clone(),
                    overlap.clone(),
                    release.clone(),
                );
                async move {
                    if busy.fetch_add(1, SeqCst) > 0 {
                        overlap.fetch_add(1, SeqCst);
                    }
                    passes.fetch_add(1, SeqCst);
                    release.acquire().await.expect("open").forget();
                    busy.fetch_sub(1, SeqCst);
                }
            }
        };
        let runtime = tokio::runtime::Handle::current();
        gate.request(&runtime, pass.clone());
        while passes.load(SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // Ten requests while the first pass runs: one more pass, not ten.
        for _ in 0..10 {
            gate.request(&runtime, pass.clone());
        }
        release.add_permits(1);
        while passes.load(SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        release.add_permits(1);
        while gate.running.load(SeqCst) {
            tokio::task::yield_now().await;
        }
        assert_eq!(passes.load(SeqCst), 2);
        assert_eq!(overlap.load(SeqCst), 0, "never two passes at once");
        // Idle again: the next request runs at once.
        release.add_permits(1);
        gate.request(&runtime, pass);
        while passes.load(SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
    }
}
