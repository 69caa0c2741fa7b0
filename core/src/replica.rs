//! This process's name among KQueen's replicas: `<host>-<pid>-<random>`, the host being the
//! pod's name on Kubernetes. Operation leases and periodic jobs' leases carry it, so an
//! operator sees which replica holds what.

/// A new replica identity (two calls in one process differ: tests run several engines).
pub fn new_replica_id() -> String {
    format!(
        "{}-{}-{}",
        host_name(),
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
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
    fn an_id_names_the_host_the_process_and_a_random_part() {
        let id = super::new_replica_id();
        let parts: Vec<&str> = id.rsplitn(3, '-').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1], std::process::id().to_string());
        assert!(!parts[2].is_empty());
        assert_ne!(id, super::new_replica_id());
    }
}
