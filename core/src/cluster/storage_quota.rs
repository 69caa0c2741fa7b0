//! A tenant's quota of shared storage (the bytes its hosted control planes keep in the shared
//! etcd): the sizes people type and read, and the decision that takes write access away from
//! the tenant's clusters while it is over the quota and gives it back once it is not.
//!
//! No hysteresis: a tenant may write while it uses at most its quota, and no longer once it
//! uses more. A read-only cluster cannot delete either (a delete is a write in etcd), so a
//! tenant gets under again when an operator raises or removes the quota, when clusters are
//! deleted, or when etcd drops expired leased keys (Kubernetes Events); the switch is judged
//! once per inventory round, so it flips at most once per round.

use uuid::Uuid;

/// The largest quota accepted: 1 PiB (and far below what the databases' BIGINT holds).
pub const MAX_STORAGE_QUOTA: u64 = 1 << 50;

const UNITS: [(&str, u64); 5] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
];

/// Reads a size as people write it: `512 MiB`, `2GiB`, `1.5 GiB`, `64 Ki`, `1048576 B`. A
/// plain number is MiB. Binary units only (`KiB` … `TiB`, or Kubernetes' `Ki` … `Ti`): `GB`
/// is refused rather than guessed. At most [`MAX_STORAGE_QUOTA`], at least one byte.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "must be a size such as 512 MiB or 2 GiB (a plain number is MiB), between 1 B and 1 PiB, or empty; not {:?}",
            text.chars().take(40).collect::<String>()
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let factor = match unit.as_str() {
        "" | "mi" | "mib" => 1 << 20,
        "b" => 1,
        "ki" | "kib" => 1 << 10,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let bytes = match number.parse::<u64>() {
        Ok(n) => n.checked_mul(factor),
        // Fractions: exact enough for a quota (f64 holds integers up to 2^53 exactly).
        Err(_) => number
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| (v * factor as f64).round())
            .filter(|v| *v <= MAX_STORAGE_QUOTA as f64)
            // In range just above, so the cast neither truncates nor saturates.
            .map(|v| v as u64),
    };
    bytes
        .filter(|b| (1..=MAX_STORAGE_QUOTA).contains(b))
        .ok_or_else(bad)
}

/// A size for reading: the largest binary unit in which it is at least 1, one decimal
/// (`1.5 GiB`, `512 MiB`, `800 B`).
pub fn format_size(bytes: u64) -> String {
    for (unit, factor) in UNITS {
        if bytes >= factor && factor > 1 {
            let v = bytes as f64 / factor as f64;
            let text = format!("{v:.1}");
            return format!("{} {unit}", text.strip_suffix(".0").unwrap_or(&text));
        }
    }
    format!("{bytes} B")
}

/// A size written back into a form: exact, so that saving the form again keeps the value
/// (`2 GiB`, `1536 MiB`, `1000000 B`).
pub fn size_input(bytes: u64) -> String {
    for (unit, factor) in UNITS {
        if bytes >= factor && bytes.is_multiple_of(factor) {
            return format!("{} {unit}", bytes / factor);
        }
    }
    "0 B".to_owned()
}

/// Whether a tenant that keeps `used` bytes in shared storage may write there under `quota`
/// (`None`: no quota).
pub fn storage_writable(used: u64, quota: Option<u64>) -> bool {
    quota.is_none_or(|max| used <= max)
}

/// One cluster's last measured shared storage.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterStorage {
    pub cluster_id: Uuid,
    pub cluster: String,
    pub keys: u64,
    pub bytes: u64,
    pub writable: bool,
}

/// A tenant's clusters that keep something in shared storage, and its quota.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TenantStorage {
    pub tenant_id: Uuid,
    pub tenant: String,
    pub quota: Option<u64>,
    pub clusters: Vec<ClusterStorage>,
}

impl TenantStorage {
    /// Bytes over all its clusters.
    pub fn used(&self) -> u64 {
        self.clusters
            .iter()
            .fold(0u64, |sum, c| sum.saturating_add(c.bytes))
    }

    /// Whether its clusters should be writable.
    pub fn writable(&self) -> bool {
        storage_writable(self.used(), self.quota)
    }

    /// The clusters whose write access must change: every writable one when the tenant is
    /// over its quota, every read-only one when it is not.
    pub fn switches(&self) -> impl Iterator<Item = &ClusterStorage> {
        let want = self.writable();
        self.clusters.iter().filter(move |c| c.writable != want)
    }

    /// Why its clusters are switched, for their timelines and the audit trail.
    pub fn reason(&self) -> String {
        let used = self.used();
        let quota = match self.quota {
            Some(q) => format!("quota {} ({q} bytes)", format_size(q)),
            None => "no quota".to_owned(),
        };
        let verdict = if self.writable() {
            "writes allowed again"
        } else {
            "writes refused"
        };
        format!(
            "tenant {} uses {} ({used} bytes) of shared etcd, {quota}: {verdict}",
            self.tenant,
            format_size(used)
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MIB: u64 = 1 << 20;

    fn cluster(name: &str, bytes: u64, writable: bool) -> ClusterStorage {
        ClusterStorage {
            cluster_id: Uuid::new_v4(),
            cluster: name.to_owned(),
            keys: 10,
            bytes,
            writable,
        }
    }

    fn tenant(quota: Option<u64>, clusters: Vec<ClusterStorage>) -> TenantStorage {
        TenantStorage {
            tenant_id: Uuid::new_v4(),
            tenant: "team-a".into(),
            quota,
            clusters,
        }
    }

    fn switched(t: &TenantStorage) -> Vec<(&str, bool)> {
        t.switches()
            .map(|c| (c.cluster.as_str(), !c.writable))
            .collect()
    }

    #[test]
    fn writable_up_to_the_quota_and_always_without_one() {
        assert!(storage_writable(0, Some(1)));
        assert!(storage_writable(MIB, Some(MIB)));
        assert!(!storage_writable(MIB + 1, Some(MIB)));
        assert!(storage_writable(u64::MAX, None));
    }

    #[test]
    fn over_the_quota_every_writable_cluster_of_the_tenant_loses_write() {
        // Each cluster alone is under the quota; together they are over it.
        let t = tenant(
            Some(3 * MIB),
            vec![
                cluster("a", 2 * MIB, true),
                cluster("b", 2 * MIB, true),
                cluster("c", 0, false),
            ],
        );
        assert_eq!(t.used(), 4 * MIB);
        assert!(!t.writable());
        assert_eq!(switched(&t), [("a", false), ("b", false)]);
        assert_eq!(
            t.reason(),
            "tenant team-a uses 4 MiB (4194304 bytes) of shared etcd, quota 3 MiB (3145728 bytes): writes refused"
        );
    }

    #[test]
    fn under_the_quota_again_or_without_one_read_only_clusters_get_write_back() {
        let t = tenant(
            Some(5 * MIB),
            vec![cluster("a", 2 * MIB, false), cluster("b", 2 * MIB, true)],
        );
        assert_eq!(switched(&t), [("a", true)]);
        assert!(t
            .reason()
            .ends_with("quota 5 MiB (5242880 bytes): writes allowed again"));
        let removed = tenant(None, vec![cluster("a", 9 * MIB, false)]);
        assert_eq!(switched(&removed), [("a", true)]);
        assert!(removed.reason().ends_with("no quota: writes allowed again"));
    }

    #[test]
    fn nothing_switches_when_every_cluster_already_is_as_it_should_be() {
        let over = tenant(Some(MIB), vec![cluster("a", 2 * MIB, false)]);
        assert_eq!(switched(&over), []);
        let under = tenant(Some(MIB), vec![cluster("a", MIB, true)]);
        assert_eq!(switched(&under), []);
        let at_max = tenant(
            Some(u64::MAX),
            vec![cluster("a", u64::MAX, true), cluster("b", 5, true)],
        );
        assert_eq!(at_max.used(), u64::MAX, "saturates");
        assert_eq!(switched(&at_max), []);
    }

    #[test]
    fn sizes_people_type() {
        for (text, bytes) in [
            ("512", 512 * MIB),
            ("512 MiB", 512 * MIB),
            (" 2gib ", 2 << 30),
            ("1.5 GiB", 3 << 29),
            ("64 Ki", 64 << 10),
            ("100 B", 100),
            ("1 TiB", 1 << 40),
            ("1024 TiB", MAX_STORAGE_QUOTA),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "-5",
            "-5 MiB",
            "abc",
            "2 GB",
            "1.2.3",
            "0",
            "0 B",
            "0.1 B",
            "1025 TiB",
            "99999999999999999999",
            "1e9",
            "NaN",
            "inf",
            ". MiB",
            "MiB",
        ] {
            let e = parse_size(bad).expect_err(bad);
            assert!(e.contains("such as 512 MiB"), "{e}");
        }
    }

    #[test]
    fn sizes_people_read_and_sizes_that_survive_a_second_save() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(800), "800 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(512 * MIB), "512 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        for bytes in [
            1,
            1000,
            1024,
            1_000_000,
            1536 * MIB,
            2 << 30,
            MAX_STORAGE_QUOTA,
        ] {
            assert_eq!(parse_size(&size_input(bytes)), Ok(bytes), "{bytes}");
        }
        assert_eq!(size_input(2 << 30), "2 GiB");
        assert_eq!(size_input(1536 * MIB), "1536 MiB");
    }
}
