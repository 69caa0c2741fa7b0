//! Running the engine until a cluster gets where a test wants it.

use std::time::{Duration, Instant};

use kqueen_core::cluster::ClusterState;
use kqueen_core::{Actor, Kqueen};

/// Runs the engine until the cluster is in `want` (or gone, for `None`); a cluster in Error
/// fails the test with its reason and timeline.
pub async fn converge(
    k: &Kqueen,
    engine: &kqueen_core::engine::Engine,
    id: &str,
    want: Option<ClusterState>,
) {
    let ops = Actor::cli(Some("ops".into()));
    let started = Instant::now();
    loop {
        engine.run_until_idle().await.unwrap();
        let state = match k.clusters().cluster_detail(&ops, id).await {
            Ok(d) => {
                if d.cluster.state == ClusterState::Error {
                    panic!("the cluster failed: {:?}\n{:#?}", d.cluster.error, d.events);
                }
                Some(d.cluster.state)
            }
            Err(kqueen_core::Error::NotFound(_)) => None,
            Err(e) => panic!("{e}"),
        };
        if state == want {
            println!("{want:?} after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "still {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
