//! How adoption travels: the `kqueen_dto::adopt` types filled from the domain's own.

use kqueen_dto::adopt as dto;

use crate::provisioner::Discovered;
use crate::AdoptRequest;

impl From<Discovered> for dto::AdoptableCluster {
    fn from(d: Discovered) -> Self {
        Self {
            reference: d.reference,
            name: d.name,
            location: d.location,
            class: d.class,
            kubernetes_version: d.kubernetes_version,
            phase: d.phase,
            ready: d.ready,
            control_plane_nodes: d.control_plane_nodes,
            worker_nodes: d.worker_nodes,
            adopted_by: d.adopted_by.map(|id| id.to_string()),
        }
    }
}

impl From<dto::AdoptRequest> for AdoptRequest {
    fn from(r: dto::AdoptRequest) -> Self {
        Self {
            tenant: r.tenant,
            name: r.name,
            template: r.template,
            reference: r.reference,
        }
    }
}
