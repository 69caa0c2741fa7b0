//! What the node lab asks of this host, and how it leaves it as it found it: commands with a
//! time limit, and the host state a node touches outside its own
//! directory (network namespaces, pod log folders, the directories kubeadm and the kubelet
//! insist on), recorded before the node starts and restored after.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs `program args` with at most `limit` (coreutils `timeout`); its output, or why not.
pub fn run(program: &str, args: &[&str], limit: Duration) -> Result<Output, String> {
    let out = Command::new("timeout")
        .arg("-k")
        .arg("2")
        .arg(format!("{}", limit.as_secs().max(1)))
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{program} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn names_in(dir: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Host folders a kubelet of 1.20 writes to whatever its `--root-dir`: the device plugins'
/// socket lives in `/var/lib/kubelet/device-plugins`, container logs in `/var/log/pods` and
/// `/var/log/containers`, the CNI's cache in `/var/lib/cni`; kubeadm writes `/etc/kubernetes` and `/var/lib/kubelet` (the lab
/// mounts its own folders over them, in a mount namespace of kubeadm's own).
pub const MOUNT_POINTS: [&str; 2] = ["/etc/kubernetes", "/var/lib/kubelet"];
/// Folders whose new entries are the node's: its containers' logs, the CNI's cache of its
/// pods' networks.
const WATCHED: [&str; 4] = [
    "/var/log/pods",
    "/var/log/containers",
    "/var/lib/cni/results",
    "/var/lib/cni",
];
const NETNS_DIR: &str = "/run/netns";

/// What was on the host before the node started.
#[derive(Debug, Default)]
pub struct HostBefore {
    netns: BTreeSet<String>,
    /// Each watched folder's entries, `None` when it did not exist.
    watched: Vec<(String, Option<BTreeSet<String>>)>,
    created: Vec<PathBuf>,
    /// The cgroups under `kubepods` (see [`super::cgroups`]).
    kubepods: BTreeSet<PathBuf>,
}

impl HostBefore {
    /// Records the host's state and creates the mount points kubeadm needs (remembering
    /// which it made).
    pub fn record() -> std::io::Result<Self> {
        let mut created = Vec::new();
        for dir in MOUNT_POINTS {
            let path = Path::new(dir);
            if !path.exists() {
                // The outermost folder made, so that removing it removes all.
                let mut top = path.to_path_buf();
                while let Some(parent) = top.parent().filter(|p| !p.exists()) {
                    top = parent.to_path_buf();
                }
                std::fs::create_dir_all(path)?;
                created.push(top);
            }
        }
        Ok(Self {
            netns: names_in(NETNS_DIR),
            watched: WATCHED
                .iter()
                .map(|d| ((*d).to_owned(), Path::new(d).exists().then(|| names_in(d))))
                .collect(),
            created,
            kubepods: super::cgroups::kubepods(),
        })
    }

    /// Removes what appeared since [`HostBefore::record`]: network namespaces (the pods'),
    /// new entries of the watched folders (or the folders, when new), the folders it
    /// created and the pods' cgroups. The kubelets and containers must be gone.
    pub fn restore(&self) {
        super::cgroups::remove_new_kubepods(&self.kubepods);
        for name in names_in(NETNS_DIR).difference(&self.netns) {
            let _ = run("ip", &["netns", "delete", name], Duration::from_secs(10));
        }
        for (dir, before) in &self.watched {
            match before {
                None => {
                    let _ = std::fs::remove_dir_all(dir);
                }
                Some(before) => {
                    for name in names_in(dir).difference(before) {
                        let path = Path::new(dir).join(name);
                        let _ =
                            std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
                    }
                }
            }
        }
        for dir in self.created.iter().rev() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Unmounts (lazily, deepest first) everything mounted under `dir`.
pub fn unmount_under(dir: &Path) {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let prefix = dir.display().to_string();
    let mut points: Vec<&str> = table
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_unstable_by_key(|p| std::cmp::Reverse(p.len()));
    points.dedup();
    for p in points {
        let _ = run("umount", &["-l", p], Duration::from_secs(10));
    }
}

/// SIGKILL to every process whose command line holds `marker` (the shims of the lab's
/// containerd name its socket's folder).
pub fn kill_holding(marker: &str) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) && pid != std::process::id() {
            crate::process::kill(pid);
        }
    }
}

/// Why containers cannot run on this host, if they cannot.
pub fn missing() -> Option<String> {
    if !nix_root() {
        return Some("the node lab needs root (containerd, mounts, network namespaces)".into());
    }
    for program in [
        "containerd",
        "ctr",
        "runc",
        "unshare",
        "ip",
        "umount",
        "timeout",
    ] {
        if which(program).is_none() {
            return Some(format!(
                "{program} is not installed (Debian: containerd runc containernetworking-plugins iproute2)"
            ));
        }
    }
    for plugin in ["bridge", "host-local", "loopback"] {
        if !Path::new(super::CNI_BIN).join(plugin).is_file() {
            return Some(format!(
                "the CNI plugin {plugin} is not in {} (Debian: containernetworking-plugins)",
                super::CNI_BIN
            ));
        }
    }
    if !Path::new(super::BUSYBOX).is_file() {
        return Some(format!(
            "{} is missing (Debian: busybox-static)",
            super::BUSYBOX
        ));
    }
    None
}

fn nix_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// The path of `program` on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}
