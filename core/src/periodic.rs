//! Periodic work on one replica at a time. Every replica runs the same timers (inventory
//! syncs, the time-to-live sweep, session purges, planner statistics, the rollouts' and the autoscaler's turns); at each turn a replica
//! asks for the job's lease in the database and runs the job only when it holds it. The
//! holder renews the lease at every turn and every half period while the job runs (a job
//! that loses its lease stops), so the job stays where it is and never runs twice at once;
//! when the holder stops (gracefully: it gives its leases up; killed: its leases run out,
//! 2.5 periods at most) another replica takes the job at its next turn.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::Store;

/// A job that runs on one replica at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Job {
    /// Reading every Ready cluster's inventory.
    InventorySync,
    /// Queueing the deletion of clusters whose time-to-live ran out, the access sweep, and
    /// the scheduled backups that are due.
    Sweeps,
    /// Deleting expired sessions.
    SessionPurge,
    /// Refreshing the query planner's statistics.
    Statistics,
    /// Driving the upgrades in waves.
    Rollouts,
    /// Autoscaling clusters' worker nodes.
    Autoscale,
}

impl Job {
    pub const ALL: [Job; 6] = [
        Job::InventorySync,
        Job::Sweeps,
        Job::SessionPurge,
        Job::Statistics,
        Job::Rollouts,
        Job::Autoscale,
    ];

    /// The lease's name in the database.
    pub fn name(self) -> &'static str {
        match self {
            Job::InventorySync => "inventory-sync",
            Job::Sweeps => "sweeps",
            Job::SessionPurge => "session-purge",
            Job::Statistics => "statistics",
            Job::Rollouts => "rollouts",
            Job::Autoscale => "autoscale",
        }
    }

    /// How long a lease taken at a turn lasts, for a job that runs `every`: two periods
    /// and a half, so that the holder's next turn (even a late one) renews it; a replica
    /// killed right after renewing hands the job over within three and a half periods (its
    /// lease, then the others' next turn).
    pub fn hold(every: Duration) -> Duration {
        every.saturating_mul(5) / 2
    }
}

/// This replica's turns at periodic jobs.
#[derive(Clone)]
pub struct JobLeases {
    store: Arc<dyn Store>,
    owner: String,
    /// The jobs this replica held at its last turn (for the log: taken over, given up).
    held: Arc<Mutex<BTreeSet<Job>>>,
}

impl JobLeases {
    /// `owner` is this replica's name ([`crate::replica::new_replica_id`]).
    pub fn new(store: Arc<dyn Store>, owner: impl Into<String>) -> Self {
        Self {
            store,
            owner: owner.into(),
            held: Arc::default(),
        }
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Whether this replica runs `job` now, a job that runs `every`: takes or renews its
    /// lease. A database error means no (another replica may hold it; the next turn asks
    /// again).
    pub async fn turn(&self, job: Job, every: Duration) -> bool {
        let now = crate::clock::now();
        let until = now
            + chrono::Duration::from_std(Job::hold(every)).unwrap_or(chrono::Duration::hours(1));
        let holds = match self
            .store
            .take_job_lease(job.name(), &self.owner, now, until)
            .await
        {
            Ok(holds) => holds,
            Err(e) => {
                // Whether the lease is still ours is unknown: not this turn.
                tracing::warn!(job = job.name(), error = %e, "cannot take a periodic job's lease");
                return false;
            }
        };
        let before = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if holds {
                !held.insert(job)
            } else {
                held.remove(&job)
            }
        };
        match (before, holds) {
            (false, true) => {
                tracing::info!(job = job.name(), owner = %self.owner, "this replica runs the job")
            }
            (true, false) => tracing::info!(job = job.name(), "another replica runs the job now"),
            _ => {}
        }
        holds
    }

    /// Runs `work` if this replica's turn at `job` comes (see [`Self::turn`]), renewing the
    /// lease every half period while it runs: a job longer than its lease still runs on one
    /// replica only. When a renewal fails (another replica took the job, or the database
    /// does not answer) `work` is dropped, which stops it. `None`: not run or stopped.
    pub async fn run<T>(
        &self,
        job: Job,
        every: Duration,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        if !self.turn(job, every).await {
            return None;
        }
        let mut renew = tokio::time::interval((every / 2).max(Duration::from_millis(100)));
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew.tick().await;
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return Some(out),
                _ = renew.tick() => {
                    if !self.turn(job, every).await {
                        tracing::warn!(job = job.name(), "the job's lease was lost: stopping it");
                        return None;
                    }
                }
            }
        }
    }

    /// Gives up every lease this replica holds (it is stopping; its jobs must have ended):
    /// the others take the jobs at their next turn.
    pub async fn release_all(&self) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).clear();
        if let Err(e) = self.store.drop_job_leases(&self.owner).await {
            tracing::warn!(error = %e, "cannot give the periodic jobs' leases up");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{Job, JobLeases};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A long job keeps its lease while it runs (renewed every half period), so another
    /// replica's turns find it taken; once it has ended and been given up, the other runs it.
    #[tokio::test]
    async fn a_job_longer_than_its_lease_still_runs_on_one_replica() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("kq.db").display());
        let store: Arc<dyn crate::store::Store> =
            Arc::new(crate::store::connect(&url).await.unwrap());
        let (a, b) = (
            JobLeases::new(store.clone(), "a"),
            JobLeases::new(store.clone(), "b"),
        );
        let every = Duration::from_millis(400);
        let runs = Arc::new(AtomicUsize::new(0));
        let long = {
            let (a, runs) = (a.clone(), runs.clone());
            tokio::spawn(async move {
                a.run(Job::InventorySync, every, async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // Five periods: twice the lease.
                    tokio::time::sleep(every * 5).await;
                })
                .await
            })
        };
        tokio::task::yield_now().await;
        for _ in 0..8 {
            tokio::time::sleep(every / 2).await;
            let ran = b
                .run(Job::InventorySync, every, async {
                    runs.fetch_add(1, Ordering::SeqCst);
                })
                .await;
            assert!(ran.is_none());
        }
        assert_eq!(long.await.unwrap(), Some(()));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        a.release_all().await;
        assert!(b.run(Job::InventorySync, every, async {}).await.is_some());
    }

    #[test]
    fn a_lease_outlasts_the_next_turn_and_names_are_distinct() {
        assert_eq!(Job::hold(Duration::from_secs(60)), Duration::from_secs(150));
        let names: std::collections::BTreeSet<&str> = Job::ALL.iter().map(|j| j.name()).collect();
        assert_eq!(names.len(), Job::ALL.len());
    }
}
