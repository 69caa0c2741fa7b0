//! Several lab nodes at once, for tests where machines come and go (autoscaling). Each node
//! is a [`Machine`] (its own containerd, bridge and /24) with a kubelet that registers
//! straight with the credentials it is given (no kubeadm: the provisioner a pool plays
//! installs its machines ready to join), named and serving on `127.0.0.N` (N from 2, the
//! API server reaches each by that Hostname address), its pods under a cgroup root of its
//! own (`/<pool id>n<N>`): two kubelets under one `/kubepods` would each kill the other's
//! pods as orphans. `reserved_cpu` is kept from each node's allocatable CPU (its
//! `kubeReserved`), so that a node holds few pods on a 2-core machine.
//!
//! Removing a node stops its kubelet (the Node object stays, NotReady, as when a cloud
//! machine is deleted), kills its containers, stops its containerd and removes its cgroups;
//! dropping the pool removes every node and what they left on the host. A pool holds the
//! same machine-wide turn as [`super::NodeLab`].

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::{cgroups, host, take_turn, Machine, KUBELET_ENV, PAUSE_IMAGE};
use crate::process::{free_port, log_file, write_private};

/// At most this many nodes at once (each is a containerd and a kubelet on 2 cores).
pub const MAX_NODES: usize = 4;

struct PoolNode {
    name: String,
    machine: Machine,
    kubelet: Option<Child>,
    cgroup_root: String,
}

impl PoolNode {
    fn stop(&mut self) {
        if let Some(mut k) = self.kubelet.take() {
            let _ = k.kill();
            let _ = k.wait();
        }
        self.machine.shut_down();
        cgroups::remove_root(&self.cgroup_root);
    }
}

pub struct NodePool {
    dir: tempfile::TempDir,
    id: String,
    reserved_cpu: String,
    nodes: Vec<PoolNode>,
    /// Every node's cgroup root, removed nodes' too (swept again at the end: a runc still
    /// finishing when its node stopped may make a cgroup after the first sweep).
    roots: Vec<String>,
    /// The last octet of the next node's name.
    next: u8,
    host: host::HostBefore,
    _turn: tokio::sync::OwnedMutexGuard<()>,
    _machine: std::fs::File,
}

impl NodePool {
    /// Why a pool cannot run here (printed by the tests that skip), or `None`.
    pub fn unavailable() -> Option<String> {
        super::unavailable(&[KUBELET_ENV])
    }

    /// A pool whose kubelets reach their cluster with `kubeconfig` (credentials that may
    /// register nodes); `None` (after printing why) when containers cannot run here.
    pub async fn start(kubeconfig: &str, reserved_cpu: &str) -> Option<Self> {
        if let Some(why) = Self::unavailable() {
            println!("skipped: no node pool: {why}");
            return None;
        }
        let (turn, machine) = take_turn().await;
        let host = host::HostBefore::record().expect("the host's kubelet folders");
        let dir = tempfile::Builder::new()
            .prefix("kqueen-pool-")
            .tempdir()
            .expect("a folder for the pool");
        write_private(
            &dir.path().join("kubeconfig").display().to_string(),
            kubeconfig,
        )
        .expect("the pool's kubeconfig");
        Some(Self {
            id: format!("kqp{:05x}", super::machine::rand_u32() & 0xf_ffff),
            dir,
            reserved_cpu: reserved_cpu.to_owned(),
            nodes: Vec::new(),
            roots: Vec::new(),
            next: 2,
            host,
            _turn: turn,
            _machine: machine,
        })
    }

    /// The nodes' names, oldest first.
    pub fn names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Starts a machine and its kubelet (it registers by itself, Ready some 15 s later);
    /// the node's name. Blocks while containerd starts and the images are imported.
    pub fn add(&mut self) -> Result<String, String> {
        if self.nodes.len() >= MAX_NODES {
            return Err(format!("a pool holds at most {MAX_NODES} nodes"));
        }
        let n = self.next;
        self.next = self.next.checked_add(1).ok_or("no more node names")?;
        let name = format!("127.0.0.{n}");
        let taken: Vec<u8> = self.nodes.iter().map(|n| n.machine.octet()).collect();
        let machine = Machine::start(&taken);
        let cgroup_root = format!("{}n{n}", self.id);
        self.roots.push(cgroup_root.clone());
        let mut node = PoolNode {
            name: name.clone(),
            machine,
            kubelet: None,
            cgroup_root,
        };
        let started = cgroups::make_root(&node.cgroup_root)
            .map_err(|e| format!("cgroup root /{}: {e}", node.cgroup_root))
            .and_then(|()| self.start_kubelet(&node));
        match started {
            Ok(child) => {
                node.kubelet = Some(child);
                self.nodes.push(node);
                Ok(name)
            }
            Err(e) => {
                node.stop();
                Err(e)
            }
        }
    }

    fn start_kubelet(&self, node: &PoolNode) -> Result<Child, String> {
        let binary = std::env::var(KUBELET_ENV).map_err(|_| format!("{KUBELET_ENV} not set"))?;
        let dir = node.machine.dir();
        let config = dir.join("kubelet.yaml");
        std::fs::write(&config, self.config(node)).map_err(|e| e.to_string())?;
        let path = |p: PathBuf| p.display().to_string();
        Command::new(binary)
            .args([
                format!("--config={}", path(config)),
                format!("--kubeconfig={}", path(self.dir.path().join("kubeconfig"))),
                format!("--root-dir={}", path(dir.join("kubelet"))),
                format!("--cert-dir={}", path(dir.join("kubelet").join("pki"))),
                format!("--volume-plugin-dir={}", path(dir.join("volume-plugins"))),
                "--container-runtime=remote".into(),
                format!(
                    "--container-runtime-endpoint=unix://{}",
                    node.machine.socket().display()
                ),
                format!("--pod-infra-container-image={PAUSE_IMAGE}"),
                format!("--hostname-override={}", node.name),
            ])
            .stdin(Stdio::null())
            .stdout(log_file(dir, "kubelet.log"))
            .stderr(log_file(dir, "kubelet.log"))
            .spawn()
            .map_err(|e| format!("start the kubelet: {e}"))
    }

    /// The node's KubeletConfiguration: its address and port, its cgroup root, the CPU kept
    /// back, and what a test machine needs (no swap check, a fuller disk allowed, no
    /// iptables chains of its own: the host's stay as they were).
    fn config(&self, node: &PoolNode) -> String {
        format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {address}
port: {port}
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
cgroupRoot: /{root}
failSwapOn: false
makeIPTablesUtilChains: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
kubeReserved:
  cpu: {reserved}
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
maxPods: 20
",
            address = node.name,
            port = free_port(),
            root = node.cgroup_root,
            reserved = self.reserved_cpu,
        )
    }

    /// Stops node `name` (see the module's docs); whether the pool had it.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(at) = self.nodes.iter().position(|n| n.name == name) else {
            return false;
        };
        let mut node = self.nodes.remove(at);
        node.stop();
        true
    }

    /// Names the pool's cgroup roots (`/<id>n<N>`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Node `name`'s folder (its containerd's and kubelet's files and logs).
    pub fn dir_of(&self, name: &str) -> Option<PathBuf> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.machine.dir().to_path_buf())
    }

    /// The end of one of node `name`'s logs (`kubelet.log`, `containerd.log`).
    pub fn log(&self, name: &str, file: &str) -> String {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .map_or_else(String::new, |n| n.machine.log(file))
    }
}

impl Drop for NodePool {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        self.nodes.clear();
        for root in &self.roots {
            cgroups::remove_root(root);
        }
        self.host.restore();
    }
}
