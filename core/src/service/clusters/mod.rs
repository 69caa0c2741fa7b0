//! Clusters: request, list, view, scale, upgrade, delete. Kubeconfigs and per-user access
//! are in `access.rs`, tenants' quotas in `quotas.rs`.

mod adopt;
mod day2;
mod join;
mod new_cluster;
mod replace_node;
mod request;

use uuid::Uuid;

pub use adopt::AdoptRequest;
pub(crate) use day2::Via;

use super::cluster_admin::ClusterAdmin;
use super::guard::Guard;
use super::providers::Catalog;
use super::tenants::Tenancy;
use crate::audit::action;
use crate::cluster::{Cluster, ClusterEvent, ClusterFilter, Operation};
use crate::deps::Deps;
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::provisioner::{Capabilities, ParamKind};
use crate::{Actor, Error, Result};

/// A cluster with what its page shows.
#[derive(Debug, Clone)]
pub struct ClusterDetail {
    pub cluster: Cluster,
    pub capabilities: Capabilities,
    /// Newest first.
    pub operations: Vec<Operation>,
    /// Oldest first (the newest entries).
    pub events: Vec<ClusterEvent>,
    /// Whether the caller gets the admin kubeconfig (operators) or a per-user one.
    pub admin_kubeconfig: bool,
    /// What a scale may ask for under the cluster's template (None: the template fixes the
    /// node count, or the provisioner has no such parameter).
    pub node_range: Option<(i64, i64)>,
    /// The versions an upgrade may choose from (empty: any version-shaped text).
    pub version_options: Vec<String>,
    /// What tenant admins' personal kubeconfigs may do in the cluster (its template's
    /// choice).
    pub admin_access: crate::cluster::AdminAccess,
    /// Operators: what the cluster keeps in storage shared with other clusters (a hosted
    /// control plane's etcd key space), as last measured, and when.
    pub shared_storage: Option<crate::provisioner::SharedStorageReading>,
}

/// Where a secret cluster parameter (an uploaded kubeconfig) lives in the vault.
/// Clusters: request, view, scale, upgrade, delete (as durable operations).
#[derive(Clone)]
pub struct Clusters {
    deps: Deps,
    guard: Guard,
    tenancy: Tenancy,
    catalog: Catalog,
    admin: ClusterAdmin,
}

impl Clusters {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        tenancy: &Tenancy,
        catalog: &Catalog,
        admin: &ClusterAdmin,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            tenancy: tenancy.clone(),
            catalog: catalog.clone(),
            admin: admin.clone(),
        }
    }
}

impl Clusters {
    /// What the cluster's provider can do with its current settings (nothing, when this
    /// portal has no provisioner of its kind or the provider is gone).
    pub(crate) async fn capabilities_of(&self, cluster: &Cluster) -> Result<Capabilities> {
        Ok(self
            .admin
            .provisioner_of(cluster)
            .await?
            .map(|(p, config)| p.capabilities_for(&config))
            .unwrap_or_default())
    }

    /// The tenants whose clusters the actor sees (`None`: all).
    fn cluster_scope(&self, actor: &Actor) -> Result<Option<Vec<Uuid>>> {
        if policy::check(actor, Permission::ListAllTenants).is_ok() {
            return Ok(None);
        }
        match actor.identity() {
            Some(who) => Ok(Some(who.memberships.iter().map(|m| m.tenant_id).collect())),
            None => Err(Error::Unauthenticated),
        }
    }

    /// Clusters the actor may see, filtered and paginated, with the total count.
    pub async fn list_clusters(
        &self,
        actor: &Actor,
        filter: &ClusterFilter,
        page: Page,
    ) -> Result<(Vec<Cluster>, u64)> {
        let scope = match self.cluster_scope(actor) {
            Ok(s) => s,
            Err(e) => {
                self.guard
                    .audit_refusal(actor, action::CLUSTER_LIST, "clusters", None, &e)
                    .await?;
                return Err(e);
            }
        };
        self.deps
            .store
            .list_clusters(filter, scope.as_deref(), page)
            .await
    }

    /// A cluster the actor may view; others answer "not found" (and are audited).
    pub(crate) async fn visible_cluster(
        &self,
        actor: &Actor,
        id: &str,
        action: &str,
    ) -> Result<Cluster> {
        let store = &self.deps.store;
        self.guard
            .visible(
                actor,
                action,
                (id, "cluster"),
                |uuid| store.cluster(uuid),
                |c: &Cluster| c.tenant_id,
            )
            .await
    }

    pub async fn cluster_detail(&self, actor: &Actor, id: &str) -> Result<ClusterDetail> {
        let cluster = self
            .visible_cluster(actor, id, action::CLUSTER_VIEW)
            .await?;
        let capabilities = self.capabilities_of(&cluster).await?;
        // Operators see how much shared storage the cluster uses.
        let operator = policy::check(actor, Permission::ListAllTenants).is_ok();
        let history = self
            .deps
            .store
            .history_of(cluster.id, 10, 300, operator)
            .await?;
        // The template, read once: what a scale or upgrade may ask for, and tenant admins'
        // access (the defaults when it is gone).
        let template = self.template_of(&cluster).await?;
        let (mut node_range, mut version_options) = (None, Vec::new());
        if capabilities.scale || capabilities.upgrade {
            let (schema, fixed, _) = self.template_schema(&cluster, template.as_ref())?;
            if !fixed.contains_key("node_count") {
                if let Some(ParamKind::Integer { min, max, .. }) =
                    schema.get("node_count").map(|s| &s.kind)
                {
                    node_range = Some((min.unwrap_or(1).max(1), max.unwrap_or(1000).min(1000)));
                }
            }
            if let Some(ParamKind::Enum { options, .. }) =
                schema.get("kubernetes_version").map(|s| &s.kind)
            {
                version_options = options.clone();
            }
        }
        let admin_access = template.map(|t| t.admin_access).unwrap_or_default();
        let shared_storage =
            history
                .shared_storage
                .map(|(usage, at)| crate::provisioner::SharedStorageReading {
                    usage,
                    measured_at: at,
                });
        Ok(ClusterDetail {
            shared_storage,
            node_range,
            version_options,
            admin_access,
            admin_kubeconfig: policy::check(actor, Permission::AdminKubeconfig).is_ok(),
            cluster,
            capabilities,
            operations: history.operations,
            events: history.events,
        })
    }

    /// Timeline entries after `after` (for live updates).
    pub async fn cluster_events(
        &self,
        actor: &Actor,
        id: &str,
        after: Option<Uuid>,
    ) -> Result<Vec<ClusterEvent>> {
        let cluster = self
            .visible_cluster(actor, id, action::CLUSTER_VIEW)
            .await?;
        self.deps.store.events_of(cluster.id, after, 500).await
    }
}
