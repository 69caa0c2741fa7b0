//! Periodic work on one replica at a time. Every replica runs the same timers (inventory
//! syncs, the time-to-live and access sweeps, session purges, planner statistics); at each
//! turn a replica asks for the job's lease in the database and runs the job only when it
//! holds it. The holder renews the lease at every turn, so the job stays where it is; when
//! the holder stops (gracefully: it gives its leases up; killed: its leases run out) another
//! replica takes the job at its next turn.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::Store;

/// A job that runs on one replica at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Job {
    /// Reading every Ready cluster's inventory.
    InventorySync,
    /// Queueing the deletion of clusters whose time-to-live ran out, and the access sweep.
    Sweeps,
    /// Deleting expired sessions.
    SessionPurge,
    /// Refreshing the query planner's statistics.
    Statistics,
}

impl Job {
    pub const ALL: [Job; 4] = [
        Job::InventorySync,
        Job::Sweeps,
        Job::SessionPurge,
        Job::Statistics,
    ];

    /// The lease's name in the database.
    pub fn name(self) -> &'static str {
        match self {
            Job::InventorySync => "inventory-sync",
            Job::Sweeps => "sweeps",
            Job::SessionPurge => "session-purge",
            Job::Statistics => "statistics",
        }
    }

    /// How long a lease taken at a turn lasts, for a job that runs `every`: two periods
    /// and a half, so that the holder's next turn (even a late one) renews it, and a
    /// replica that stopped hands the job over within three periods.
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
                tracing::warn!(job = job.name(), error = %e, "cannot take a periodic job's lease");
                false
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

    /// Gives up every lease this replica holds (it is stopping): the others take the jobs at
    /// their next turn.
    pub async fn release_all(&self) {
        let held: Vec<Job> = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *held).into_iter().collect()
        };
        for job in held {
            if let Err(e) = self.store.drop_job_lease(job.name(), &self.owner).await {
                tracing::warn!(job = job.name(), error = %e, "cannot give a periodic job's lease up");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Job;
    use std::time::Duration;

    #[test]
    fn a_lease_outlasts_the_next_turn_and_names_are_distinct() {
        assert_eq!(Job::hold(Duration::from_secs(60)), Duration::from_secs(150));
        let names: std::collections::BTreeSet<&str> = Job::ALL.iter().map(|j| j.name()).collect();
        assert_eq!(names.len(), Job::ALL.len());
    }
}
