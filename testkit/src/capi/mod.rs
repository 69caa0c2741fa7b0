//! Cluster API for tests: minimal CRDs of `cluster.x-k8s.io` (Cluster, ClusterClass,
//! Machine) installed into a real kube-apiserver ([`install_crds`]), and a controller that
//! plays Cluster API against them ([`FakeCapi`]): it walks each Cluster through
//! provisioning one stage per tick, publishes its kubeconfig Secret and keeps Machines in
//! line with `spec.topology` (MachinePools as replicas it counts, without Machines; no
//! `controlPlane`: a managed one, without Machines either; a shrinking group loses a Machine
//! annotated [`DELETE_MACHINE_ANNOTATION`] first), so a provisioner sees the progression a
//! real management cluster shows.
//!
//! The CRDs are ours, not upstream's: only the fields KQueen reads and writes are declared
//! (unknown fields under `spec`, `spec.topology` and `status` are kept).

mod conditions;
mod controller;
mod crds;
mod deletion;
mod machines;
mod pools;

pub use controller::FakeCapi;
pub use crds::{create_cluster_class, install_crds};

use kube::core::{ApiResource, GroupVersionKind};

/// The API group of Cluster API's core types.
pub const GROUP: &str = "cluster.x-k8s.io";
/// The finalizer the fake keeps on every Cluster until its Machines are gone.
pub const FINALIZER: &str = "cluster.cluster.x-k8s.io";
/// Label on Machines and the kubeconfig Secret: the Cluster they belong to.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// Label on control plane Machines (empty value).
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// Label on worker Machines: `<cluster>-<machineDeployment name>`.
pub const DEPLOYMENT_NAME_LABEL: &str = "cluster.x-k8s.io/deployment-name";
/// Label on worker Machines: the machineDeployment's name in the topology.
pub const TOPOLOGY_DEPLOYMENT_LABEL: &str = "topology.cluster.x-k8s.io/deployment-name";
/// Annotation on a Machine (any value): when its group shrinks, it is deleted first, as
/// Cluster API's MachineSet and control plane controllers do.
pub const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";

/// Annotation on a Cluster: `Failed` with this message, and nothing more happens.
pub const FAIL_ANNOTATION: &str = "test.kqueen.io/fail";
/// Annotation on a Cluster: after the infrastructure, waits forever for the control plane
/// with this message.
pub const STUCK_ANNOTATION: &str = "test.kqueen.io/stuck";
/// Annotation on a Cluster: its kubeconfig Secret is never written.
pub const NO_KUBECONFIG_ANNOTATION: &str = "test.kqueen.io/no-kubeconfig";
/// Annotation on a Cluster: its kubeconfig Secret holds garbage.
pub const BAD_KUBECONFIG_ANNOTATION: &str = "test.kqueen.io/bad-kubeconfig";

/// Which versions of the group the API server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// Only `v1beta1` (Cluster API before 1.11).
    V1Beta1,
    /// `v1beta1` and `v1beta2`, `v1beta2` stored (Cluster API 1.11 and later).
    Both,
}

impl Served {
    /// The versions served, oldest first.
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            Served::V1Beta1 => &["v1beta1"],
            Served::Both => &["v1beta1", "v1beta2"],
        }
    }

    /// The newest version served (the storage version), the one the fake works with.
    pub fn newest(self) -> &'static str {
        match self {
            Served::V1Beta1 => "v1beta1",
            Served::Both => "v1beta2",
        }
    }

    /// The API resource of `kind` (`Cluster`, `ClusterClass`, `Machine`) at the newest
    /// version, for `Api::<DynamicObject>::namespaced_with`.
    pub fn resource(self, kind: &str) -> ApiResource {
        resource(self.newest(), kind)
    }
}

/// The API resource of `kind` at `version` of the group.
pub fn resource(version: &str, kind: &str) -> ApiResource {
    let lower = kind.to_ascii_lowercase();
    let plural = if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, kind), &plural)
}
