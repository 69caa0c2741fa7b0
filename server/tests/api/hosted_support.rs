//! Supervised control planes outlive the portal that started them: kill what a test left.

/// Kills the processes named by the pid files below a directory (`<work>/<cluster>/run/`).
pub struct KillOnDrop(pub std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let Ok(clusters) = std::fs::read_dir(&self.0) else {
            return;
        };
        for cluster in clusters.flatten() {
            let Ok(files) = std::fs::read_dir(cluster.path().join("run")) else {
                continue;
            };
            for f in files.flatten() {
                if f.path().extension().is_some_and(|e| e == "pid") {
                    if let Some(pid) = std::fs::read_to_string(f.path())
                        .ok()
                        .and_then(|s| s.trim().parse::<u32>().ok())
                    {
                        let _ = std::process::Command::new("kill")
                            .args(["-KILL", &pid.to_string()])
                            .status();
                    }
                }
            }
        }
    }
}
