//! The lab's node in a cluster KQueen made: what the real-node tests and the nodes
//! benchmark share (joining with the line KQueen shows, waiting for the node, the
//! control-plane images of the `kubernetes` runtime).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::Api;

use super::{ImageSpec, Join, NodeLab, NODE_NAME};

/// The real binaries' variables (`eval "$(bash ../shared/kube/install.sh)"`).
pub const APISERVER_ENV: &str = "KQUEEN_TEST_KUBE_APISERVER";
pub const CONTROLLER_MANAGER_ENV: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";
pub const SCHEDULER_ENV: &str = "KQUEEN_TEST_KUBE_SCHEDULER";

/// The control-plane binaries, or why there are none (printed by those that skip).
pub struct Binaries {
    pub apiserver: String,
    pub controller_manager: String,
    pub scheduler: String,
}

impl Binaries {
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| {
            std::env::var(name).map_err(|_| {
                format!(
                    "{APISERVER_ENV}, {CONTROLLER_MANAGER_ENV} and {SCHEDULER_ENV} name the \
                     real binaries ({name} is not set)"
                )
            })
        };
        Ok(Self {
            apiserver: var(APISERVER_ENV)?,
            controller_manager: var(CONTROLLER_MANAGER_ENV)?,
            scheduler: var(SCHEDULER_ENV)?,
        })
    }

    /// The binaries, or `None` after printing why the caller skips.
    pub fn or_skip() -> Option<Self> {
        Self::from_env()
            .map_err(|why| println!("skipped: {why}"))
            .ok()
    }

    /// A hosted provider's `versions` line of runtime `process` for these binaries.
    pub fn process_versions(&self) -> String {
        format!("1.20 {} {}\n", self.apiserver, self.controller_manager)
    }

    /// Imports an image per binary, `kqueen.local/<name>:<tag>` for each tag (the same
    /// files under each: a new image to roll to); the runtime `kubernetes` `versions` line
    /// of each tag, as `<version> <apiserver image> <controller-manager image>`.
    pub fn import_images(&self, lab: &NodeLab, tags: &[(&str, &str)]) -> String {
        for (binary, name) in [
            (&self.apiserver, "kube-apiserver"),
            (&self.controller_manager, "kube-controller-manager"),
            (&self.scheduler, "kube-scheduler"),
        ] {
            let path = format!("/bin/{name}");
            let first = tags.first().map_or("v1.20.2", |(_, tag)| tag);
            let image = ImageSpec::new(&format!("kqueen.local/{name}:{first}"), &[&path])
                .file(binary, &path);
            lab.import(&image);
            for (_, tag) in tags.iter().skip(1) {
                lab.tag(&image.reference, &format!("kqueen.local/{name}:{tag}"));
            }
        }
        tags.iter()
            .map(|(version, tag)| {
                format!(
                    "{version} kqueen.local/kube-apiserver:{tag} \
                     kqueen.local/kube-controller-manager:{tag}\n"
                )
            })
            .collect()
    }
}

pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The machine's load average (1, 5, 15 min), printed beside figures.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A join and how long the node then took to be Ready.
#[derive(Debug, Clone)]
pub struct Joined {
    pub join: Join,
    pub ready_after: Duration,
}

/// Runs `command` (the `kubeadm join` line a cluster's join page shows) on the lab and
/// waits, at most `limit`, for the node to be Ready in the cluster `admin` reaches.
pub async fn join_until_ready(
    lab: &NodeLab,
    command: &str,
    admin: &kube::Client,
    limit: Duration,
) -> Result<Joined, String> {
    let join = lab
        .kubeadm_join(command, limit)
        .await
        .map_err(|e| format!("{e}\nkubelet: {}", lab.log("kubelet.log")))?;
    let nodes: Api<Node> = Api::all(admin.clone());
    let started = Instant::now();
    loop {
        match nodes.get_opt(NODE_NAME).await {
            Ok(Some(n)) if node_ready(&n) => {
                return Ok(Joined {
                    join,
                    ready_after: started.elapsed(),
                })
            }
            other if started.elapsed() > limit => {
                return Err(format!(
                    "node not Ready within {limit:?}: {other:?}\nkubelet: {}",
                    lab.log("kubelet.log")
                ))
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}
