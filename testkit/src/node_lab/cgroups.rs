//! The cgroups a lab kubelet leaves on the host: a pool node's cgroup root of its own
//! (made before its kubelet starts, removed after), and the pod cgroups a kubelet under the
//! host's `/kubepods` leaves empty when it is killed (removed when the lab ends).
//!
//! These machines mount cgroup v1, one hierarchy per controller under `/sys/fs/cgroup`; on a
//! cgroup v2 host the one hierarchy is `/sys/fs/cgroup` itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

const ROOT: &str = "/sys/fs/cgroup";

/// The hierarchies: each v1 controller's folder (and `unified`, the v2 hierarchy of a hybrid
/// host, where runc makes its containers' cgroups too), or the v2 root.
fn hierarchies() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    if root.join("cgroup.controllers").is_file() {
        return vec![root.to_path_buf()];
    }
    let mut all: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                // `cpu` and `cpuacct` may be links to `cpu,cpuacct`: one folder, made once.
                .filter_map(|e| std::fs::canonicalize(e.path()).ok())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    all.sort();
    all.dedup();
    all
}

/// Makes `/<name>` in every hierarchy (cpuset's with its parent's CPUs and memory nodes, or
/// no task could join it): a kubelet's `--cgroup-root` must exist in all.
pub fn make_root(name: &str) -> std::io::Result<()> {
    for hierarchy in hierarchies() {
        let dir = hierarchy.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        for file in ["cpuset.cpus", "cpuset.mems"] {
            if let Ok(parent) = std::fs::read_to_string(hierarchy.join(file)) {
                std::fs::write(dir.join(file), parent.trim())?;
            }
        }
    }
    Ok(())
}

/// Removes `/<name>` and everything under it from every hierarchy, deepest first; a
/// cgroup with tasks still leaving is tried again for a few seconds.
pub fn remove_root(name: &str) {
    let dirs: Vec<PathBuf> = hierarchies().iter().map(|h| h.join(name)).collect();
    remove_all(dirs.iter().flat_map(|d| walk(d)).collect());
}

/// Every cgroup folder under each hierarchy's `kubepods` (itself included).
pub fn kubepods() -> BTreeSet<PathBuf> {
    hierarchies()
        .iter()
        .flat_map(|h| walk(&h.join("kubepods")))
        .collect()
}

/// Removes the `kubepods` cgroups that were not there `before` (those of pods a killed
/// kubelet never cleaned up, and `kubepods` itself when the lab's kubelet made it).
pub fn remove_new_kubepods(before: &BTreeSet<PathBuf>) {
    remove_all(kubepods().difference(before).cloned().collect());
}

/// `dir` and every folder under it (none when it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        todo.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
        found.push(d);
    }
    found
}

fn remove_all(mut dirs: Vec<PathBuf>) {
    // Deepest first: a cgroup with children cannot go.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for _ in 0..50 {
        dirs.retain(|d| d.exists() && std::fs::remove_dir(d).is_err());
        if dirs.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("cgroups left (tasks still in them): {dirs:?}");
}
