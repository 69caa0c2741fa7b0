//! Waiting for something a test cannot be told about (a pod Ready, a cluster provisioned, a
//! lease moved), bounded, saying how long it took or what it last saw.

use std::future::Future;
use std::time::{Duration, Instant};

/// Calls `check` every 250 ms until it gives a value, at most `limit`; prints how long it
/// took; panics with `check`'s last answer when the time is up.
pub async fn within<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(v) => {
                println!("{what}: {:.1} s", started.elapsed().as_secs_f64());
                return v;
            }
            Err(e) if started.elapsed() > limit => panic!("{what} not within {limit:?}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}
