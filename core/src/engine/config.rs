//! How the engine runs: its identity in leases, its pace and its limits.

use std::path::PathBuf;
use std::time::Duration;

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// This worker's identity in leases ([`crate::replica::new_replica_id`]: the pod's
    /// name on Kubernetes, so that an operator sees which replica holds an operation).
    pub owner: String,
    /// How long a claim is valid without renewal.
    pub lease: Duration,
    /// How often idle workers look for work.
    pub poll_interval: Duration,
    /// Operations executed at the same time by this process.
    pub concurrency: usize,
    /// Attempts after which a transient error becomes a failure.
    pub max_attempts: u32,
    /// Where provisioners keep per-cluster working directories.
    pub work_dir: PathBuf,
    /// How often expired clusters are looked for.
    pub ttl_sweep_interval: Duration,
    /// How often the upgrades in waves are moved on.
    pub rollout_interval: Duration,
    /// How often the autoscaler takes a turn at each autoscaled cluster.
    pub autoscale_interval: Duration,
    /// Longest pause between two calls of a waiting provisioner.
    pub max_wait: Duration,
    /// How soon what a running provisioner reports (step, progress, log lines) is saved,
    /// and so shown on the cluster page and in the API.
    pub progress_flush: Duration,
}

impl EngineConfig {
    pub fn new(work_dir: PathBuf) -> Self {
        Self {
            owner: crate::replica::new_replica_id(),
            lease: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            concurrency: 4,
            max_attempts: 8,
            work_dir,
            ttl_sweep_interval: Duration::from_secs(60),
            rollout_interval: Duration::from_secs(10),
            autoscale_interval: Duration::from_secs(30),
            max_wait: Duration::from_secs(30),
            progress_flush: Duration::from_millis(500),
        }
    }
}
