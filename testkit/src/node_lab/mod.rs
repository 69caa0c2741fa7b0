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
//! unmounts what is under its folder and removes what it left on the host. One lab runs at a
//! time on a machine (a second waits, in this process or another): kubelets share the
//! host's `/kubepods` cgroups and kubelet folders whatever they are told.

pub mod cluster;
mod host;
pub mod image;
pub mod kqueen_image;
mod kubelet;
mod node_port;
mod relay;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub use image::ImageSpec;

use crate::process::log_file;
pub use kubelet::Join;
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
    dir: tempfile::TempDir,
    /// Names this lab's bridge and CNI network (`kq` + 6 hex digits).
    id: String,
    containerd: Option<Child>,
    kubelet: tokio::sync::Mutex<kubelet::Kubelet>,
    host: host::HostBefore,
    /// The bridge's own address, the pods' gateway (`10.244.N.1`).
    gateway: String,
    busybox_digest: String,
    _turn: tokio::sync::OwnedMutexGuard<()>,
    /// Holds the machine-wide lock (released when the file is closed, after the cleanup).
    _machine: std::fs::File,
}

impl NodeLab {
    /// Why a node cannot run here (printed by the tests that skip), or `None`.
    pub fn unavailable() -> Option<String> {
        for var in [KUBELET_ENV, KUBEADM_ENV] {
            match std::env::var(var) {
                Ok(p) if Path::new(&p).is_file() => {}
                Ok(p) => return Some(format!("{var}={p} is not a file")),
                Err(_) => return Some(format!("{var} not set")),
            }
        }
        host::missing()
    }

    /// Starts containerd with the CNI bridge and imports the pause and busybox images; `None`
    /// (after printing why) when containers cannot run here.
    pub async fn start() -> Option<Self> {
        if let Some(why) = Self::unavailable() {
            println!("skipped: no node lab: {why}");
            return None;
        }
        let turn = turn().lock_owned().await;
        // And one per machine: kubelets share /kubepods, /var/log/pods and the device
        // plugins' socket whatever their root directory.
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
        let dir = tempfile::Builder::new()
            .prefix("kqueen-node-")
            .tempdir()
            .expect("a folder for the node lab");
        let id = format!("kq{:06x}", (std::process::id() ^ rand_u32()) & 0xff_ffff);
        // A /24 of 10.244.0.0/16 of its own, so two labs never share addresses.
        let gateway = format!("10.244.{}.1", rand_u32() % 250 + 1);
        let host = host::HostBefore::record().expect("the host's kubelet folders");
        let mut lab = Self {
            dir,
            id,
            containerd: None,
            kubelet: tokio::sync::Mutex::new(kubelet::Kubelet::default()),
            host,
            gateway,
            busybox_digest: String::new(),
            _turn: turn,
            _machine: machine,
        };
        lab.add_bridge();
        lab.start_containerd();
        lab.import(
            &ImageSpec::new(PAUSE_IMAGE, &["/bin/busybox", "sleep", "2147483647"])
                .file(BUSYBOX, "/bin/busybox"),
        );
        lab.busybox_digest = lab.import(
            &ImageSpec::new(BUSYBOX_IMAGE, &["/bin/busybox", "sh"])
                .file(BUSYBOX, "/bin/busybox")
                .link("/bin/sh", "busybox"),
        );
        Some(lab)
    }

    /// The digest of [`BUSYBOX_IMAGE`] (of its manifest, as a registry would give it).
    pub fn busybox_digest(&self) -> &str {
        &self.busybox_digest
    }

    /// The lab's folder (logs: `containerd.log`, `kubelet.log`, `kubeadm.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn socket(&self) -> PathBuf {
        self.dir().join("containerd.sock")
    }

    /// The host's address on the pods' network (their gateway): what a pod reaches the host
    /// by, as a service of the machine that listens there (an etcd) is reached from a node's
    /// pods. It exists from [`NodeLab::start`] on.
    pub fn gateway(&self) -> &str {
        &self.gateway
    }

    /// The bridge with the gateway's address, before any pod (the CNI plugin would make it
    /// at the first): something on the host can listen there from the start.
    fn add_bridge(&self) {
        let address = format!("{}/24", self.gateway);
        for args in [
            ["link", "add", "name", self.id.as_str(), "type", "bridge"].as_slice(),
            ["address", "add", address.as_str(), "dev", self.id.as_str()].as_slice(),
            ["link", "set", self.id.as_str(), "up"].as_slice(),
        ] {
            host::run("ip", args, Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("ip {}: {e}", args.join(" ")));
        }
    }

    fn start_containerd(&mut self) {
        let d = self.dir().to_path_buf();
        let cni = d.join("cni");
        std::fs::create_dir_all(&cni).expect("cni folder");
        let network = self.gateway.rsplit_once('.').map_or("", |(net, _)| net);
        let subnet = format!("{network}.0/24");
        let conf = serde_json::json!({
            "cniVersion": "0.4.0",
            "name": self.id,
            "plugins": [{
                "type": "bridge", "bridge": self.id, "isGateway": true, "ipMasq": false,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]],
                         "routes": [{"dst": "0.0.0.0/0"}],
                         "dataDir": d.join("ipam").display().to_string()},
            }],
        });
        std::fs::write(cni.join("10-lab.conflist"), conf.to_string()).expect("cni conf");
        let config = format!(
            r#"version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{sock}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # This machine's root may not set a negative oom_score_adj (sandboxes ask for -998).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni}"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
"#,
            root = d.join("root").display(),
            state = d.join("state").display(),
            sock = self.socket().display(),
            cni = cni.display(),
        );
        std::fs::write(d.join("containerd.toml"), config).expect("containerd config");
        let child = Command::new("containerd")
            .arg("--config")
            .arg(d.join("containerd.toml"))
            .stdin(Stdio::null())
            .stdout(log_file(&d, "containerd.log"))
            .stderr(log_file(&d, "containerd.log"))
            .spawn()
            .expect("start containerd");
        self.containerd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.ctr(&["version"]).is_err() {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 20 s: {}",
                self.log("containerd.log")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `ctr` on the lab's containerd, in the Kubernetes namespace.
    pub fn ctr(&self, args: &[&str]) -> Result<String, String> {
        let sock = self.socket().display().to_string();
        let mut all = vec!["-a", sock.as_str(), "-n", "k8s.io"];
        all.extend_from_slice(args);
        host::run("ctr", &all, Duration::from_secs(60))
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// Builds `spec` and imports it; the image's digest (of its manifest). The image is also
    /// named by that digest (`name@sha256:…`), as a pulled image is, so kubelets report it.
    pub fn import(&self, spec: &ImageSpec) -> String {
        let archive = self.dir().join(format!(
            "image-{}.tar",
            self.dir().read_dir().map_or(0, Iterator::count)
        ));
        let digest = image::write_archive(spec, &archive).expect("write the image archive");
        let path = archive.display().to_string();
        self.ctr(&["images", "import", &path])
            .unwrap_or_else(|e| panic!("import {}: {e}", spec.reference));
        let repository = spec
            .reference
            .rsplit_once(':')
            .filter(|(_, tag)| !tag.contains('/'))
            .map_or(spec.reference.as_str(), |(r, _)| r);
        let digested = format!("{repository}@{digest}");
        // Already named so when the same files were imported before.
        let _ = self.ctr(&["images", "tag", &spec.reference, &digested]);
        let _ = std::fs::remove_file(&archive);
        digest
    }

    /// Names an imported image `reference` too (as a registry would serve the same image
    /// under a second tag).
    pub fn tag(&self, image: &str, reference: &str) {
        self.ctr(&["images", "tag", "--force", image, reference])
            .unwrap_or_else(|e| panic!("tag {image} as {reference}: {e}"));
    }

    /// The end of one of the lab's logs.
    pub fn log(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir().join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(30).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
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

    fn kill_containers(&self) {
        // Kill every task, then delete tasks and containers (what the kubelet would do).
        let ids = |what: &str| -> Vec<String> {
            self.ctr(&[what, "ls", "-q"])
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect()
        };
        for t in ids("tasks") {
            let _ = self.ctr(&["tasks", "kill", "-s", "SIGKILL", &t]);
        }
        std::thread::sleep(Duration::from_millis(500));
        for t in ids("tasks") {
            let _ = self.ctr(&["tasks", "delete", "-f", &t]);
        }
        for c in ids("containers") {
            let _ = self.ctr(&["containers", "delete", &c]);
        }
    }
}

impl Drop for NodeLab {
    fn drop(&mut self) {
        // The kubelet first: it would start again what is stopped.
        self.kubelet.get_mut().stop();
        if self.containerd.is_some() {
            self.kill_containers();
        }
        if let Some(mut c) = self.containerd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Shims outlive containerd; theirs name the lab's folder.
        host::kill_holding(&format!("{}/", self.dir().display()));
        let _ = host::run("ip", &["link", "delete", &self.id], Duration::from_secs(10));
        host::unmount_under(self.dir());
        self.host.restore();
    }
}

/// A few random bits (the lab's names, not security).
fn rand_u32() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}
