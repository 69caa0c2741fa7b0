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

/// What resolves once this process is asked to stop: the end of its standard input (the
/// parent that piped it is gone), SIGTERM or SIGINT. Listening starts here, before the
/// future is awaited, so a helper binary calls it before it announces it is ready.
pub fn on_stop() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};

    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed.send(());
    });
    let signals = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match signals {
            (Ok(mut term), Ok(mut int)) => tokio::select! {
                _ = stdin_closed => {}
                _ = term.recv() => {}
                _ = int.recv() => {}
            },
            _ => {
                let _ = stdin_closed.await;
            }
        }
    }
}

/// A port nobody listens on at 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `dir/name`, opened for appending a started process's output.
pub fn log_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .expect("log file")
}

/// Writes `text` to `path`, readable by this user only (a kubeconfig with an admin token).
pub fn write_private(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
}
