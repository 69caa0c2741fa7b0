//! A cluster about to exist, as a request or an adoption makes it: its record in
//! Provisioning and the create operation that brings it to Ready within its template's
//! timeout.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::cluster::{
    Cluster, ClusterName, ClusterState, Operation, OperationKind, Params, Provider, Template,
};
use crate::tenant::Tenant;

/// What differs between the ways a cluster comes to be.
pub(super) struct NewCluster<'a> {
    pub id: Uuid,
    pub tenant: &'a Tenant,
    pub name: ClusterName,
    pub template: &'a Template,
    pub provider: &'a Provider,
    pub parameters: Params,
    pub node_count: u32,
    /// What the provisioner's create starts from (an adoption's reference).
    pub provisioner_state: serde_json::Value,
    pub expires_at: Option<DateTime<Utc>>,
}

impl NewCluster<'_> {
    /// The cluster record and its create operation, requested by `who` at `now`.
    pub(super) fn build(self, who: &str, now: DateTime<Utc>) -> (Cluster, Operation) {
        let cluster = Cluster {
            id: self.id,
            tenant_id: self.tenant.id,
            tenant_slug: self.tenant.slug.as_str().to_owned(),
            name: self.name,
            template_id: Some(self.template.id),
            template_name: self.template.name.clone(),
            provider_id: self.provider.id,
            provider_kind: self.provider.kind,
            state: ClusterState::Provisioning,
            parameters: self.parameters,
            node_count: self.node_count,
            endpoint: None,
            provisioner_state: self.provisioner_state,
            error: None,
            expires_at: self.expires_at,
            production: false,
            created_by: who.to_owned(),
            created_at: now,
            updated_at: now,
        };
        let op = Operation::new(
            self.id,
            OperationKind::Create,
            None,
            who,
            now,
            chrono::Duration::minutes(i64::from(self.template.timeout_minutes)),
        );
        (cluster, op)
    }
}
