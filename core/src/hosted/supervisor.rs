//! The `process` runtime's supervisor: starts a control plane's processes, restarts one that
//! dies (with back-off, telling why and the end of its log), stops them on request, and
//! after a restart of KQueen adopts the ones still running instead of starting them twice.
//!
//! Each process runs in its own process group, so it outlives KQueen (a control plane must
//! not go down with the portal), and writes its pid to a file beside its log. Adoption trusts
//! a pid file only when that process is alive and runs the same command line
//! (`/proc/<pid>/cmdline`); otherwise the process is started again: its data is in etcd.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, test_kill_process, Pid, Signal};
use tokio::sync::{mpsc, watch};

/// One process of a control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// `kube-apiserver`, `kube-controller-manager`.
    pub name: String,
    pub binary: PathBuf,
    pub args: Vec<String>,
    /// Where its output goes (appended) and where its pid is kept.
    pub dir: PathBuf,
    /// Text only this control plane's command lines hold (its own directory): a process
    /// found through a pid file is stopped or replaced only when its command line holds it
    /// (after a reboot, a stale pid may name another cluster's process).
    pub marker: String,
}

impl ProcessSpec {
    pub fn log_path(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.name))
    }

    fn pid_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pid", self.name))
    }

    /// The command line as `/proc/<pid>/cmdline` holds it.
    fn cmdline(&self) -> Vec<u8> {
        let mut line = Vec::new();
        for part in std::iter::once(self.binary.as_os_str().as_encoded_bytes())
            .chain(self.args.iter().map(|a| a.as_bytes()))
        {
            line.extend_from_slice(part);
            line.push(0);
        }
        line
    }
}

/// What happened to a supervised process (for the cluster's timeline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorEvent {
    Started {
        key: String,
        name: String,
        pid: u32,
    },
    Adopted {
        key: String,
        name: String,
        pid: u32,
    },
    /// It exited without being asked to: how, and the end of its log.
    Exited {
        key: String,
        name: String,
        status: String,
        log_tail: String,
    },
    /// Started again after `after`.
    Restarting {
        key: String,
        name: String,
        after: Duration,
    },
    Stopped {
        key: String,
        name: String,
    },
}

/// Pauses between restarts: doubling from `first` up to `max`; a process that ran for
/// `reset_after` starts again from `first`.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            first: Duration::from_secs(1),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(60),
        }
    }
}

/// How long a stopped process gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How often an adopted process (not our child: no exit notice) is looked at.
const ADOPTED_POLL: Duration = Duration::from_millis(500);
/// Lines of log shown when a process exits.
const LOG_TAIL_LINES: usize = 20;

struct Supervised {
    stop: watch::Sender<bool>,
    pids: Arc<Mutex<HashMap<String, u32>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Supervises the processes of many control planes, each under a key (the cluster id).
/// Dropping it leaves the processes running (a later supervisor adopts them).
#[derive(Clone)]
pub struct Supervisor {
    running: Arc<Mutex<HashMap<String, Supervised>>>,
    events: mpsc::UnboundedSender<SupervisorEvent>,
    backoff: Backoff,
}

impl Supervisor {
    pub fn new(backoff: Backoff) -> (Self, mpsc::UnboundedReceiver<SupervisorEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        (
            Self {
                running: Arc::default(),
                events,
                backoff,
            },
            rx,
        )
    }

    /// Runs `specs` under `key`: adopts each one still running with the same command line,
    /// starts the others, and supervises them all. Replaces what ran under `key` before
    /// (stopping processes whose command line changed: an upgrade).
    pub async fn run(&self, key: &str, specs: Vec<ProcessSpec>) -> std::io::Result<()> {
        self.forget(key).await;
        let (stop, stop_rx) = watch::channel(false);
        let pids: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
        let mut tasks = Vec::new();
        for spec in specs {
            std::fs::create_dir_all(&spec.dir)?;
            let first = match adoptable(&spec) {
                Some(pid) => {
                    self.send(SupervisorEvent::Adopted {
                        key: key.into(),
                        name: spec.name.clone(),
                        pid,
                    });
                    Running::Adopted(pid)
                }
                None => {
                    stop_stale(&spec).await;
                    Running::Child(self.start(key, &spec)?)
                }
            };
            lock(&pids).insert(spec.name.clone(), first.pid());
            let watcher = Watcher {
                key: key.to_owned(),
                spec,
                events: self.events.clone(),
                backoff: self.backoff,
                stop: stop_rx.clone(),
                pids: pids.clone(),
            };
            tasks.push(tokio::spawn(watcher.watch(first)));
        }
        lock(&self.running).insert(key.to_owned(), Supervised { stop, pids, tasks });
        Ok(())
    }

    /// The pids of what runs under `key`, by process name.
    pub fn pids(&self, key: &str) -> HashMap<String, u32> {
        lock(&self.running)
            .get(key)
            .map(|s| lock(&s.pids).clone())
            .unwrap_or_default()
    }

    /// Stops every process under `key` (SIGTERM, then SIGKILL after a grace period) and
    /// removes their pid files.
    pub async fn stop(&self, key: &str) {
        let Some(s) = lock(&self.running).remove(key) else {
            return;
        };
        let _ = s.stop.send(true);
        for task in s.tasks {
            let _ = task.await;
        }
    }

    /// Stops supervising `key` and leaves its processes running (KQueen shutting down: a
    /// control plane does not depend on the portal; the next supervisor adopts them).
    pub async fn release(&self, key: &str) {
        self.forget(key).await;
    }

    /// Every key supervised now.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.running).keys().cloned().collect()
    }

    async fn forget(&self, key: &str) {
        let removed = lock(&self.running).remove(key);
        if let Some(s) = removed {
            for task in s.tasks {
                task.abort();
                // Wait until it is gone: a watcher must not restart a process after this.
                let _ = task.await;
            }
        }
    }

    /// Stops the processes named by `specs`' pid files that this supervisor does not hold
    /// (another KQueen started them, or they were never resumed), when their command line
    /// holds the spec's marker. For a delete.
    pub async fn stop_unsupervised(&self, specs: &[ProcessSpec]) {
        for spec in specs {
            stop_stale(spec).await;
            let _ = std::fs::remove_file(spec.pid_path());
        }
    }

    fn start(&self, key: &str, spec: &ProcessSpec) -> std::io::Result<tokio::process::Child> {
        let child = spawn(spec)?;
        let pid = child.id().unwrap_or(0);
        self.send(SupervisorEvent::Started {
            key: key.into(),
            name: spec.name.clone(),
            pid,
        });
        Ok(child)
    }

    fn send(&self, e: SupervisorEvent) {
        let _ = self.events.send(e);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

enum Running {
    Child(tokio::process::Child),
    Adopted(u32),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Child(c) => c.id().unwrap_or(0),
            Running::Adopted(pid) => *pid,
        }
    }
}

struct Watcher {
    key: String,
    spec: ProcessSpec,
    events: mpsc::UnboundedSender<SupervisorEvent>,
    backoff: Backoff,
    stop: watch::Receiver<bool>,
    pids: Arc<Mutex<HashMap<String, u32>>>,
}

impl Watcher {
    async fn watch(mut self, mut current: Running) {
        let mut pause = self.backoff.first;
        loop {
            let since = Instant::now();
            let pid = current.pid();
            let ended = tokio::select! {
                status = exited(&mut current) => Some(status),
                _ = stop_requested(&mut self.stop) => None,
            };
            let Some(status) = ended else {
                terminate(pid, &mut current).await;
                let _ = std::fs::remove_file(self.spec.pid_path());
                self.send(SupervisorEvent::Stopped {
                    key: self.key.clone(),
                    name: self.spec.name.clone(),
                });
                return;
            };
            self.send(SupervisorEvent::Exited {
                key: self.key.clone(),
                name: self.spec.name.clone(),
                status,
                log_tail: log_tail(&self.spec.log_path(), LOG_TAIL_LINES),
            });
            if since.elapsed() >= self.backoff.reset_after {
                pause = self.backoff.first;
            }
            self.send(SupervisorEvent::Restarting {
                key: self.key.clone(),
                name: self.spec.name.clone(),
                after: pause,
            });
            let stopped = tokio::select! {
                _ = tokio::time::sleep(pause) => false,
                _ = stop_requested(&mut self.stop) => true,
            };
            if stopped {
                let _ = std::fs::remove_file(self.spec.pid_path());
                self.send(SupervisorEvent::Stopped {
                    key: self.key.clone(),
                    name: self.spec.name.clone(),
                });
                return;
            }
            pause = (pause * 2).min(self.backoff.max);
            match spawn(&self.spec) {
                Ok(child) => {
                    let pid = child.id().unwrap_or(0);
                    lock(&self.pids).insert(self.spec.name.clone(), pid);
                    self.send(SupervisorEvent::Started {
                        key: self.key.clone(),
                        name: self.spec.name.clone(),
                        pid,
                    });
                    current = Running::Child(child);
                }
                Err(e) => {
                    // Cannot even start (binary gone): tell, and try again after the pause.
                    self.send(SupervisorEvent::Exited {
                        key: self.key.clone(),
                        name: self.spec.name.clone(),
                        status: format!("could not start: {e}"),
                        log_tail: String::new(),
                    });
                    current = Running::Adopted(0);
                }
            }
        }
    }

    fn send(&self, e: SupervisorEvent) {
        let _ = self.events.send(e);
    }
}

/// Waits until the process ends; how it ended.
async fn exited(current: &mut Running) -> String {
    match current {
        Running::Child(child) => match child.wait().await {
            Ok(status) => describe(status),
            Err(e) => format!("could not be waited for: {e}"),
        },
        Running::Adopted(pid) => {
            while alive(*pid) {
                tokio::time::sleep(ADOPTED_POLL).await;
            }
            "exited (adopted after a restart of KQueen: no exit status)".into()
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "exited".into(),
    }
}

/// SIGTERM, then SIGKILL after the grace period.
async fn terminate(pid: u32, current: &mut Running) {
    signal(pid, Signal::TERM);
    let deadline = Instant::now() + STOP_GRACE;
    loop {
        let gone = match current {
            Running::Child(child) => matches!(child.try_wait(), Ok(Some(_))),
            Running::Adopted(pid) => !alive(*pid),
        };
        if gone {
            return;
        }
        if Instant::now() >= deadline {
            signal(pid, Signal::KILL);
            if let Running::Child(child) = current {
                let _ = child.wait().await;
            }
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn signal(pid: u32, sig: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, sig);
    }
}

fn alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    // A zombie (exited, not yet reaped by its parent) still takes signals: look at its state.
    test_kill_process(p).is_ok() && !zombie(pid)
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|rest| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The pid in the spec's pid file, when that process is alive and runs this command line.
fn adoptable(spec: &ProcessSpec) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(spec.pid_path())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    (alive(pid) && cmdline == spec.cmdline()).then_some(pid)
}

/// A process from an earlier run of this spec that runs another command line (an upgrade
/// while KQueen was down): stopped before the new one starts on the same port.
async fn stop_stale(spec: &ProcessSpec) {
    let Some(pid) = std::fs::read_to_string(spec.pid_path())
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
    else {
        return;
    };
    let ours = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
        !spec.marker.is_empty()
            && c.windows(spec.marker.len())
                .any(|w| w == spec.marker.as_bytes())
    });
    if ours && alive(pid) {
        terminate(pid, &mut Running::Adopted(pid)).await;
    }
}

/// Resolves when a stop is asked for; never when the supervisor is merely dropped (KQueen
/// shutting down leaves control planes running).
async fn stop_requested(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

fn spawn(spec: &ProcessSpec) -> std::io::Result<tokio::process::Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(spec.log_path())?;
    let child = tokio::process::Command::new(&spec.binary)
        .args(&spec.args)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own group: it outlives KQueen and does not get the terminal's signals.
        .process_group(0)
        .kill_on_drop(false)
        .spawn()?;
    std::fs::write(spec.pid_path(), child.id().unwrap_or(0).to_string())?;
    Ok(child)
}

/// The last `lines` lines of a log file.
fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut text = String::new();
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_ok() {
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
