//! Clusters as the REST API and the portal send them: the cluster, its detail, operations,
//! timeline, join instructions and shared-storage readings.

use kqueen_dto::clusters;

/// A cluster without its current operation's progress (as lists send it); see
/// [`Cluster::into_dto_with`](crate::cluster::Cluster::into_dto_with).
impl From<crate::cluster::Cluster> for clusters::Cluster {
    fn from(c: crate::cluster::Cluster) -> Self {
        Self {
            id: c.id.to_string(),
            tenant: c.tenant_slug,
            name: c.name.to_string(),
            template: c.template_name,
            kind: c.provider_kind,
            state: c.state,
            parameters: c.parameters,
            node_count: c.node_count,
            endpoint: c.endpoint,
            error: c.error,
            expires_at: c.expires_at.map(|t| t.to_rfc3339()),
            production: c.production,
            created_by: c.created_by,
            created_at: c.created_at.to_rfc3339(),
            progress: None,
            current_step: None,
        }
    }
}

impl crate::cluster::Cluster {
    /// The cluster as sent, with the progress and step of `op`, its current (or last)
    /// operation.
    pub fn into_dto_with(self, op: &crate::cluster::Operation) -> clusters::Cluster {
        clusters::Cluster {
            progress: Some(op.progress),
            current_step: Some(op.step.clone()),
            ..self.into()
        }
    }
}

impl From<crate::ClusterDetail> for clusters::ClusterDetail {
    fn from(d: crate::ClusterDetail) -> Self {
        let cluster = match d.operations.first() {
            Some(op) => d.cluster.into_dto_with(op),
            None => d.cluster.into(),
        };
        Self {
            cluster,
            capabilities: d.capabilities.into(),
            operations: d.operations.into_iter().map(Into::into).collect(),
            events: d.events.into_iter().map(Into::into).collect(),
            admin_access: d.admin_access.to_string(),
            shared_storage: d.shared_storage.map(Into::into),
        }
    }
}

impl From<crate::provisioner::Capabilities> for clusters::Capabilities {
    fn from(c: crate::provisioner::Capabilities) -> Self {
        Self {
            scale: c.scale,
            upgrade: c.upgrade,
            deletes_infrastructure: c.deletes_infrastructure,
            replace_node: c.replace_node,
        }
    }
}

impl From<crate::cluster::Operation> for clusters::Operation {
    fn from(o: crate::cluster::Operation) -> Self {
        Self {
            id: o.id.to_string(),
            kind: o.kind.to_string(),
            state: o.state.to_string(),
            step: o.step,
            progress: o.progress,
            attempts: o.attempts,
            error: o.error,
            target: o.target.map(|t| t.to_string()),
            requested_by: o.requested_by,
            created_at: o.created_at.to_rfc3339(),
            started_at: o.started_at.map(|t| t.to_rfc3339()),
            finished_at: o.finished_at.map(|t| t.to_rfc3339()),
            deadline_at: o.deadline_at.to_rfc3339(),
        }
    }
}

impl From<crate::cluster::ClusterEvent> for clusters::Event {
    fn from(e: crate::cluster::ClusterEvent) -> Self {
        Self {
            id: e.id.to_string(),
            at: e.occurred_at.to_rfc3339(),
            kind: e.kind.to_string(),
            message: e.message,
        }
    }
}

impl From<crate::hosted::join::JoinInfo> for clusters::Join {
    fn from(j: crate::hosted::join::JoinInfo) -> Self {
        Self {
            endpoint: j.endpoint,
            token: j.token,
            token_id: j.token_id,
            expires_at: j.expires_at.to_rfc3339(),
            ca_cert_hash: j.ca_cert_hash,
            command: j.command,
        }
    }
}

impl From<crate::provisioner::SharedStorageReading> for clusters::SharedStorage {
    fn from(r: crate::provisioner::SharedStorageReading) -> Self {
        Self {
            keys: r.usage.keys,
            bytes: r.usage.bytes,
            writable: r.usage.writable,
            measured_at: r.measured_at.to_rfc3339(),
        }
    }
}

impl From<&crate::cluster::storage_quota::TenantStorage> for clusters::TenantStorage {
    fn from(t: &crate::cluster::storage_quota::TenantStorage) -> Self {
        Self {
            tenant: t.tenant.clone(),
            clusters: u32::try_from(t.clusters.len()).unwrap_or(u32::MAX),
            used_bytes: t.used(),
            quota_bytes: t.quota,
            writable: t.writable(),
        }
    }
}
