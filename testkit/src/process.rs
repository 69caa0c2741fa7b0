//! Processes a test started that outlive their parent on purpose (supervised control
//! planes): whether one lives, and killing what a failed test left.

use std::path::{Path, PathBuf};

/// Whether `pid` is a live process (a zombie waiting for its parent counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// SIGKILL to `pid` (ignored when it is gone).
pub fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

/// Kills, when dropped, the processes named by the pid files in a directory and in its
/// `<cluster>/run/` subdirectories (a portal's work directory).
pub struct KillOnDrop(pub PathBuf);

impl KillOnDrop {
    fn kill_in(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "pid") {
                if let Some(pid) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok())
                {
                    kill(pid);
                }
            } else if path.is_dir() {
                Self::kill_in(&path.join("run"));
            }
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        Self::kill_in(&self.0);
    }
}
