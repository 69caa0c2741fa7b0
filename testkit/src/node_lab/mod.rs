//! A real Kubernetes node on this machine, for tests: containerd (its own root, state and
//! socket in the lab's folder) with the CNI bridge (a bridge and subnet of its own), images
//! built from files (no registry is reachable) and a kubelet v1.20 (`KQUEEN_TEST_KUBELET`)
//! that joins a cluster with the real `kubeadm join` (`KQUEEN_TEST_KUBEADM`), as a user's
//! machine would. Everything listens on 127.0.0.1 or inside the pods' network namespaces.
//!
//! This machine's quirks (see `../shared/kube/node/README.md`): the kubelet refuses a
//! loopback node IP, so the node is named `localhost` and API servers reach it by its
//! Hostname address (their default); containerd must not set negative `oom_score_adj`
//! (`restrict_oom_score_adj`); kubeadm writes `/etc/kubernetes` and `/var/lib/kubelet`
//! whatever it is told, so it runs in a mount namespace of its own where the lab's folders
//! are mounted over those.
//!
//! [`NodeLab::start`] returns `None` after printing why when containers cannot run here.
//! Dropping the lab (also when a test panics) stops the kubelet, kills every container,
//! stops containerd and its shims, deletes the pods' network namespaces and the bridge,
//! unmounts what is under its folder and removes what it left on the host. One lab (or
//! [`pool::NodePool`], several nodes at once) runs at a time on a machine (a second waits,
//! in this process or another): kubelets share the host's `/kubepods` cgroups and kubelet
//! folders whatever they are told.

mod cgroups;
pub mod cluster;
mod host;
pub mod image;
pub mod kqueen_image;
mod kubelet;
pub mod machine;
mod node_port;
pub mod pool;
mod relay;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use image::ImageSpec;

pub use kubelet::Join;
pub use machine::Machine;
pub use node_port::NodePort;
pub use relay::Relay;

/// Where Debian's containernetworking-plugins are.
pub const CNI_BIN: &str = "/usr/lib/cni";
/// Debian's busybox-static: the lab's images are made of it.
pub const BUSYBOX: &str = "/bin/busybox";
/// The sandbox (pause) image: busybox sleeping.
pub const PAUSE_IMAGE: &str = "kqueen.local/pause:1";
/// A shell and a web server (`busybox httpd`), run by the tests' pods.
pub const BUSYBOX_IMAGE: &str = "kqueen.local/busybox:1";
/// The node's name: only `localhost` is reached on loopback (see the module's docs).
pub const NODE_NAME: &str = "localhost";
pub const KUBELET_ENV: &str = "KQUEEN_TEST_KUBELET";
pub const KUBEADM_ENV: &str = "KQUEEN_TEST_KUBEADM";

/// One lab at a time per process.
fn turn() -> Arc<tokio::sync::Mutex<()>> {
    static TURN: OnceLock<Arc<tokio::sync::Mutex<()>>> = OnceLock::new();
    TURN.get_or_init(|| Arc::new(tokio::sync::Mutex::new(())))
        .clone()
}

/// containerd with the CNI bridge and the lab's images, ready for a kubelet.
pub struct NodeLab {
    machine: Machine,
    kubelet: tokio::sync::Mutex<kubelet::Kubelet>,
    host: host::HostBefore,
    _turn: tokio::sync::OwnedMutexGuard<()>,
    /// Holds the machine-wide lock (released when the file is closed, after the cleanup).
    _machine: std::fs::File,
}

impl NodeLab {
    /// Why a node cannot run here (printed by the tests that skip), or `None`.
    pub fn unavailable() -> Option<String> {
        unavailable(&[KUBELET_ENV, KUBEADM_ENV])
    }

    /// Starts containerd with the CNI bridge and imports the pause and busybox images; `None`
    /// (after printing why) when containers cannot run here.
    pub async fn start() -> Option<Self> {
        if let Some(why) = Self::unavailable() {
            println!("skipped: no node lab: {why}");
            return None;
        }
        let (turn, machine_lock) = take_turn().await;
        let host = host::HostBefore::record().expect("the host's kubelet folders");
        let machine = tokio::task::spawn_blocking(|| Machine::start(&[]))
            .await
            .expect("the lab's containerd");
        Some(Self {
            machine,
            kubelet: tokio::sync::Mutex::new(kubelet::Kubelet::default()),
            host,
            _turn: turn,
            _machine: machine_lock,
        })
    }

    /// The digest of [`BUSYBOX_IMAGE`] (of its manifest, as a registry would give it).
    pub fn busybox_digest(&self) -> &str {
        self.machine.busybox_digest()
    }

    /// The lab's folder (logs: `containerd.log`, `kubelet.log`, `kubeadm.log`).
    pub fn dir(&self) -> &Path {
        self.machine.dir()
    }

    pub fn socket(&self) -> PathBuf {
        self.machine.socket()
    }

    /// The host's address on the pods' network (their gateway): what a pod reaches the host
    /// by, as a service of the machine that listens there (an etcd) is reached from a node's
    /// pods. It exists from [`NodeLab::start`] on.
    pub fn gateway(&self) -> &str {
        self.machine.gateway()
    }

    /// `ctr` on the lab's containerd, in the Kubernetes namespace.
    pub fn ctr(&self, args: &[&str]) -> Result<String, String> {
        self.machine.ctr(args)
    }

    /// Builds `spec` and imports it; the image's digest (see [`Machine::import`]).
    pub fn import(&self, spec: &ImageSpec) -> String {
        self.machine.import(spec)
    }

    /// Names an imported image `reference` too (as a registry would serve the same image
    /// under a second tag).
    pub fn tag(&self, image: &str, reference: &str) {
        self.machine.tag(image, reference);
    }

    /// The end of one of the lab's logs.
    pub fn log(&self, name: &str) -> String {
        self.machine.log(name)
    }

    /// Runs the `kubeadm join …` line a user is shown, with the flags this machine's node
    /// adds (its name, containerd's socket, the preflight checks a lab cannot pass), starts
    /// the kubelet once kubeadm has written its configuration, and waits (at most
    /// `limit`) for kubeadm to finish: the TLS bootstrap done, the node registered.
    pub async fn kubeadm_join(&self, command: &str, limit: Duration) -> Result<Join, String> {
        let mut kubelet = self.kubelet.lock().await;
        kubelet::join(self.dir(), &self.socket(), &mut kubelet, command, limit).await
    }

    /// Stops the kubelet (its containers keep running, as on a machine whose kubelet died).
    pub async fn stop_kubelet(&self) {
        self.kubelet.lock().await.stop();
    }

    /// Starts the kubelet again with the credentials it has.
    pub async fn restart_kubelet(&self) {
        let mut kubelet = self.kubelet.lock().await;
        kubelet.start(self.dir(), &self.socket());
    }
}

impl Drop for NodeLab {
    fn drop(&mut self) {
        // The kubelet first: it would start again what is stopped.
        self.kubelet.get_mut().stop();
        self.machine.shut_down();
        self.host.restore();
    }
}

/// Why nodes cannot run here: a variable of `binaries` unset or not naming a file, or what
/// the host lacks; `None` when they can.
fn unavailable(binaries: &[&str]) -> Option<String> {
    for var in binaries {
        match std::env::var(var) {
            Ok(p) if Path::new(&p).is_file() => {}
            Ok(p) => return Some(format!("{var}={p} is not a file")),
            Err(_) => return Some(format!("{var} not set")),
        }
    }
    host::missing()
}

/// This process's turn and the machine-wide lock: one lab (a node lab or a pool) at a time,
/// as kubelets share `/kubepods`, `/var/log/pods` and the device plugins' socket whatever
/// their root directory.
async fn take_turn() -> (tokio::sync::OwnedMutexGuard<()>, std::fs::File) {
    let turn = turn().lock_owned().await;
    let machine = tokio::task::spawn_blocking(|| {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(std::env::temp_dir().join("kqueen-node-lab.lock"))?;
        file.lock()?;
        Ok::<_, std::io::Error>(file)
    })
    .await
    .expect("the machine's node lab lock")
    .expect("the machine's node lab lock");
    (turn, machine)
}
