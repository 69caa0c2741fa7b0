//! How the engine runs: its identity in leases, its pace and its limits.

use std::path::PathBuf;
use std::time::Duration;

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// This worker's identity in leases (unique per process): `<host>-<pid>-<random>`, the
    /// host being the pod's name on Kubernetes, so that an operator sees which replica holds
    /// an operation.
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
    /// Longest pause between two calls of a waiting provisioner.
    pub max_wait: Duration,
    /// How soon what a running provisioner reports (step, progress, log lines) is saved,
    /// and so shown on the cluster page and in the API.
    pub progress_flush: Duration,
}

impl EngineConfig {
    pub fn new(work_dir: PathBuf) -> Self {
        Self {
            owner: format!(
                "{}-{}-{}",
                host_name(),
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
            lease: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            concurrency: 4,
            max_attempts: 8,
            work_dir,
            ttl_sweep_interval: Duration::from_secs(60),
            max_wait: Duration::from_secs(30),
            progress_flush: Duration::from_millis(500),
        }
    }
}

/// This machine's (or pod's) name: `HOSTNAME`, else the kernel's, else `kqueen`; only the
/// characters of a DNS name, at most 63.
fn host_name() -> String {
    let name = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        .take(63)
        .collect();
    if name.is_empty() {
        "kqueen".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_owner_names_the_host_the_process_and_a_random_part() {
        let owner = super::EngineConfig::new("w".into()).owner;
        let parts: Vec<&str> = owner.rsplitn(3, '-').collect();
        assert_eq!(parts.len(), 3, "{owner}");
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1], std::process::id().to_string());
        assert!(!parts[2].is_empty());
        assert_ne!(owner, super::EngineConfig::new("w".into()).owner);
    }
}
