//! The lab's kubelet and the real `kubeadm join` that sets it up.
//!
//! kubeadm writes the bootstrap kubeconfig and the cluster CA to `/etc/kubernetes`, the
//! kubelet's configuration (downloaded from the cluster) to `/var/lib/kubelet`, then waits for
//! the kubelet (which it would start through systemd) to finish the TLS bootstrap. Here it
//! runs in a mount namespace of its own where the lab's `etc` and `var-lib-kubelet` folders
//! are mounted over those two; the lab starts the kubelet itself, with those files and the
//! flags this machine needs, as soon as kubeadm has written them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{free_port, log_file};

use super::host::MOUNT_POINTS;
use super::{KUBEADM_ENV, KUBELET_ENV, NODE_NAME, PAUSE_IMAGE};

/// The kubelet process, when one runs, and the port it serves on (127.0.0.1).
#[derive(Default)]
pub struct Kubelet {
    child: Option<Child>,
    port: u16,
}

/// What a join printed and how long it took.
#[derive(Debug, Clone)]
pub struct Join {
    pub output: String,
    pub took: Duration,
    /// The port the kubelet serves on (127.0.0.1).
    pub kubelet_port: u16,
}

fn etc(dir: &Path) -> PathBuf {
    dir.join("etc-kubernetes")
}

fn var_lib(dir: &Path) -> PathBuf {
    dir.join("var-lib-kubelet")
}

impl Kubelet {
    /// Starts the kubelet with what kubeadm wrote (bootstrapping when it has no
    /// credentials yet).
    pub fn start(&mut self, dir: &Path, socket: &Path) {
        self.stop();
        if self.port == 0 {
            self.port = free_port();
        }
        let (etc, var_lib) = (etc(dir), var_lib(dir));
        let path = |p: PathBuf| p.display().to_string();
        let binary = std::env::var(KUBELET_ENV).expect("the kubelet binary");
        let args = [
            format!("--config={}", path(var_lib.join("config.yaml"))),
            format!(
                "--bootstrap-kubeconfig={}",
                path(etc.join("bootstrap-kubelet.conf"))
            ),
            format!("--kubeconfig={}", path(etc.join("kubelet.conf"))),
            format!("--root-dir={}", path(dir.join("kubelet"))),
            format!("--cert-dir={}", path(dir.join("kubelet").join("pki"))),
            format!("--volume-plugin-dir={}", path(dir.join("volume-plugins"))),
            // The configuration names /etc/kubernetes/pki/ca.crt: kubeadm wrote it here.
            format!("--client-ca-file={}", path(etc.join("pki").join("ca.crt"))),
            // No systemd on these machines.
            "--cgroup-driver=cgroupfs".into(),
            "--container-runtime=remote".into(),
            format!("--container-runtime-endpoint=unix://{}", socket.display()),
            format!("--pod-infra-container-image={PAUSE_IMAGE}"),
            format!("--hostname-override={NODE_NAME}"),
            "--address=127.0.0.1".into(),
            format!("--port={}", self.port),
            "--read-only-port=0".into(),
            "--healthz-port=0".into(),
            "--fail-swap-on=false".into(),
            // A test machine's disk may be fuller than a node's defaults allow.
            "--eviction-hard=memory.available<100Mi,nodefs.available<1%,imagefs.available<1%"
                .into(),
            "--image-gc-high-threshold=100".into(),
            // No iptables chains of its own (KUBE-FIREWALL, KUBE-MARK-…): kube-proxy does not
            // run here, and the host's rules stay as they were.
            "--make-iptables-util-chains=false".into(),
        ];
        let child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log_file(dir, "kubelet.log"))
            .stderr(log_file(dir, "kubelet.log"))
            .spawn()
            .expect("start the kubelet");
        self.child = Some(child);
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The `kubeadm join` line as the lab runs it: the user's line (its `kubeadm` replaced by
/// the test binary), then the node's own flags.
fn kubeadm_args(command: &str, socket: &Path) -> Result<Vec<String>, String> {
    let mut words = command.split_whitespace();
    if (words.next(), words.next()) != (Some("kubeadm"), Some("join")) {
        return Err(format!("'{command}' is not a kubeadm join command"));
    }
    let mut args = vec!["join".to_owned()];
    args.extend(words.map(str::to_owned));
    args.extend([
        format!("--node-name={NODE_NAME}"),
        format!("--cri-socket={}", socket.display()),
        // No crictl, conntrack, systemd… on a test machine: kubeadm's checks only warn.
        "--ignore-preflight-errors=all".into(),
        // Says why discovery retries (a revoked token: no signature for its id).
        "--v=1".into(),
    ]);
    Ok(args)
}

/// Runs the join (see the module's docs); the kubelet is started as soon as kubeadm wrote
/// its files (unless it runs already), and runs on afterwards.
pub async fn join(
    dir: &Path,
    socket: &Path,
    kubelet: &mut Kubelet,
    command: &str,
    limit: Duration,
) -> Result<Join, String> {
    let kubeadm = std::env::var(KUBEADM_ENV).map_err(|_| format!("{KUBEADM_ENV} not set"))?;
    let (etc, var_lib) = (etc(dir), var_lib(dir));
    for d in [&etc, &var_lib] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let script = format!(
        "mount --bind \"$1\" {} && mount --bind \"$2\" {} && shift 2 && exec \"$@\"",
        MOUNT_POINTS[0], MOUNT_POINTS[1]
    );
    // Each join writes its own log (the last one is kept).
    let log_path = dir.join("kubeadm.log");
    let log_file = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let log_err = log_file.try_clone().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .arg(&etc)
        .arg(&var_lib)
        .arg(&kubeadm)
        .args(kubeadm_args(command, socket)?)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("kubeadm: {e}"))?;
    let deadline = started + limit;
    let written = [
        etc.join("bootstrap-kubelet.conf"),
        var_lib.join("config.yaml"),
    ];
    let output = || std::fs::read_to_string(&log_path).unwrap_or_default();
    // A node that runs already (joined before) keeps its kubelet.
    let mut kubelet_started = kubelet.child.is_some();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if status.success() && kubelet_started {
                return Ok(Join {
                    output: output(),
                    took: started.elapsed(),
                    kubelet_port: kubelet.port,
                });
            }
            return Err(format!("kubeadm join ended with {status}:\n{}", output()));
        }
        if !kubelet_started && written.iter().all(|f| f.is_file()) {
            // kubeadm writes each file whole before the next: the config is last.
            tokio::time::sleep(Duration::from_millis(200)).await;
            kubelet.start(dir, socket);
            kubelet_started = true;
        }
        if Instant::now() > deadline {
            let _ = child.kill().await;
            return Err(format!(
                "kubeadm join did not finish within {} s:\n{}",
                limit.as_secs(),
                output()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_users_line_is_run_with_the_nodes_own_flags() {
        let socket = std::path::Path::new("/lab/containerd.sock");
        let args = super::kubeadm_args(
            "kubeadm join 127.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:00",
            socket,
        )
        .unwrap();
        assert_eq!(
            args[..6],
            [
                "join",
                "127.0.0.1:6443",
                "--token",
                "abcdef.0123456789abcdef",
                "--discovery-token-ca-cert-hash",
                "sha256:00"
            ]
        );
        assert!(args.contains(&"--cri-socket=/lab/containerd.sock".to_owned()));
        assert!(super::kubeadm_args("rm -rf /", socket).is_err());
    }
}
