//! Processes a test started outside its own control (supervised control planes outlive
//! their supervisor).

/// Kills the processes named by the pid files in a directory.
pub struct KillOnDrop(pub std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "pid") {
                let pid = std::fs::read_to_string(entry.path())
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok())
                    .and_then(rustix::process::Pid::from_raw);
                if let Some(pid) = pid {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }
}
