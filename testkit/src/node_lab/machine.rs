//! One lab machine's container runtime: containerd with its own root, state and socket in
//! the machine's folder, a CNI bridge and /24 of its own, and the lab's images imported
//! (built from files: no registry is reachable). A kubelet runs on top of it (the node lab's,
//! joined with kubeadm, or a pool's). Dropping it kills every container, stops containerd
//! and its shims, deletes the bridge and unmounts what is under its folder.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{host, image, ImageSpec, BUSYBOX, BUSYBOX_IMAGE, CNI_BIN, PAUSE_IMAGE};
use crate::process::log_file;

pub struct Machine {
    dir: tempfile::TempDir,
    /// Names the machine's bridge and CNI network (`kq` + 6 hex digits).
    id: String,
    containerd: Option<Child>,
    /// The bridge's own address, the pods' gateway (`10.244.N.1`).
    gateway: String,
    busybox_digest: String,
}

impl Machine {
    /// Starts containerd with the CNI bridge and imports the pause and busybox images. The
    /// caller holds the machine-wide lab lock; `taken` are the /24s (third octets) other
    /// machines of the same lab use.
    pub fn start(taken: &[u8]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("kqueen-node-")
            .tempdir()
            .expect("a folder for the node lab");
        let id = format!("kq{:06x}", (std::process::id() ^ rand_u32()) & 0xff_ffff);
        // A /24 of 10.244.0.0/16 of its own, so two machines never share addresses.
        let mut octet = u8::try_from(rand_u32() % 250 + 1).unwrap_or(1);
        while taken.contains(&octet) {
            octet = octet % 250 + 1;
        }
        let mut machine = Self {
            dir,
            id,
            containerd: None,
            gateway: format!("10.244.{octet}.1"),
            busybox_digest: String::new(),
        };
        machine.add_bridge();
        machine.start_containerd();
        machine.import(
            &ImageSpec::new(PAUSE_IMAGE, &["/bin/busybox", "sleep", "2147483647"])
                .file(BUSYBOX, "/bin/busybox"),
        );
        machine.busybox_digest = machine.import(
            &ImageSpec::new(BUSYBOX_IMAGE, &["/bin/busybox", "sh"])
                .file(BUSYBOX, "/bin/busybox")
                .link("/bin/sh", "busybox"),
        );
        machine
    }

    pub fn busybox_digest(&self) -> &str {
        &self.busybox_digest
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn socket(&self) -> PathBuf {
        self.dir().join("containerd.sock")
    }

    pub fn gateway(&self) -> &str {
        &self.gateway
    }

    /// The third octet of the machine's /24.
    pub fn octet(&self) -> u8 {
        self.gateway
            .split('.')
            .nth(2)
            .and_then(|o| o.parse().ok())
            .unwrap_or(0)
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

    /// `ctr` on the machine's containerd, in the Kubernetes namespace.
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

    /// The end of one of the machine's logs.
    pub fn log(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir().join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(30).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
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

    /// Kills the containers, stops containerd and its shims, deletes the bridge and
    /// unmounts what is under the folder (the kubelet on top must be stopped first: it would
    /// start again what is stopped). Once; dropping does it too.
    pub fn shut_down(&mut self) {
        if let Some(mut containerd) = self.containerd.take() {
            self.kill_containers();
            let _ = containerd.kill();
            let _ = containerd.wait();
        }
        // Shims outlive containerd; theirs name the machine's folder.
        host::kill_holding(&format!("{}/", self.dir().display()));
        let _ = host::run("ip", &["link", "delete", &self.id], Duration::from_secs(10));
        host::unmount_under(self.dir());
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A few random bits (the lab's names, not security).
pub fn rand_u32() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}
