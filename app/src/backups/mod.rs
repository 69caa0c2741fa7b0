//! Backups in the portal: the cluster page's "Backups" section, for tenant admins and
//! operators: take one (with or without Secrets), follow it, see what each holds (kinds,
//! what was left out and why, volumes and how to keep their data), download its archive,
//! and restore it into this cluster or another after a preview; the "Backups" page lists the
//! backups of every cluster the caller backs up, deleted ones too.

pub mod actions;
mod delete;
pub mod dto;
mod page;
pub mod restore_page;
mod section;
pub mod sfn;

pub use page::AllBackups;
pub use restore_page::BackupRestore;
pub use section::ClusterBackups;

/// Where the portal serves a backup's archive (a plain GET route: it answers with a file).
pub fn archive_path(cluster_id: &str, backup_id: &str) -> String {
    format!("/clusters/{cluster_id}/backups/{backup_id}/archive")
}

/// A byte count in words people compare (`12.4 KiB`).
pub fn size_label(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size_label(0), "0 B");
        assert_eq!(size_label(1023), "1023 B");
        assert_eq!(size_label(1536), "1.5 KiB");
        assert_eq!(size_label(5 << 20), "5.0 MiB");
        assert_eq!(size_label(3 << 30), "3.0 GiB");
    }
}
