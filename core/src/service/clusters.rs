//! Clusters: request, list, view, scale, upgrade, delete. Kubeconfigs and per-user access
//! are in `access.rs`, tenants' quotas in `quotas.rs`.

use uuid::Uuid;

use super::cluster_admin::ClusterAdmin;
use super::guard::Guard;
use super::providers::Catalog;
use super::templates::refined_schema;
use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::cluster::{
    Cluster, ClusterEvent, ClusterFilter, ClusterName, ClusterRequest, ClusterState, EventKind,
    Operation, OperationKind,
};
use crate::deps::Deps;
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::provisioner::{Capabilities, OpContext, ParamKind, ParamSchema, Params};
use crate::tenant::Tenant;
use crate::vault::names;
use crate::vault::Secret;
use crate::{Actor, Error, Result, ValidationError};

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
    /// Accepts a cluster request: validates it against the template, checks the quota, stores
    /// the cluster and its create operation. Provisioning happens in the background.
    #[tracing::instrument(skip_all, fields(actor = %actor, tenant = ?req.tenant, name = %req.name))]
    pub async fn request_cluster(
        &self,
        actor: &Actor,
        req: ClusterRequest,
    ) -> Result<(Cluster, Operation)> {
        let slug = match req.tenant.as_deref().map(str::trim) {
            Some(slug) if !slug.is_empty() => slug.to_owned(),
            _ => Tenancy::only_tenant(actor, Permission::ManageClusters)?,
        };
        let tenant = self
            .tenancy
            .visible_tenant(actor, &slug, action::CLUSTER_CREATE)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(tenant.id),
                action::CLUSTER_CREATE,
                &req.name,
                Some(tenant.id),
            )
            .await?;
        let result = self.try_request_cluster(actor, &tenant, &req).await;
        self.guard
            .audited(
                actor,
                action::CLUSTER_CREATE,
                &req.name,
                Some(tenant.id),
                result,
            )
            .await
    }

    async fn try_request_cluster(
        &self,
        actor: &Actor,
        tenant: &Tenant,
        req: &ClusterRequest,
    ) -> Result<(Cluster, Operation)> {
        let name = ClusterName::parse(req.name.trim())?;
        let view = match self.catalog.template(actor, req.template.trim()).await {
            Ok(v) => v,
            Err(Error::NotFound(_)) => {
                return Err(ValidationError::new("template", "no such template").into())
            }
            Err(e) => return Err(e),
        };
        let t = &view.template;
        if t.disabled || (!t.tenants.is_empty() && !t.tenants.contains(&tenant.id)) {
            return Err(ValidationError::new(
                "template",
                format!(
                    "template '{}' is not offered to tenant {}",
                    t.name, tenant.slug
                ),
            )
            .into());
        }
        let provider = self.deps.store.provider(t.provider_id).await?;
        if provider.disabled {
            return Err(
                ValidationError::new("template", "the template's provider is disabled").into(),
            );
        }
        let mut values = view.schema.validate(&req.parameters)?;
        values.extend(view.fixed.clone());
        let (secret_params, params): (Params, Params) = values
            .into_iter()
            .partition(|(k, _)| view.schema.get(k).is_some_and(|s| s.secret));
        let node_count = params
            .get("node_count")
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0);
        let quota = self.deps.store.quota(tenant.id).await?;
        let usage = self.deps.store.usage(tenant.id).await?;
        quota.admit(usage, node_count).map_err(Error::Conflict)?;

        let id = Uuid::now_v7();
        let provisioner = self.catalog.provisioner(provider.kind)?;
        // Request-time checks (e.g. an imported cluster answers), with a bounded time.
        let mut ctx = OpContext::new(
            name.as_str(),
            tenant.slug.as_str(),
            self.deps.settings.work_dir.join(id.to_string()),
        );
        ctx.cluster_id = id;
        ctx.params = params.clone();
        ctx.provider_config = provider.config.clone();
        ctx.provider_secrets = crate::engine::provider_secrets(&self.deps.vault, &provider).await?;
        ctx.param_secrets = secret_params
            .iter()
            .map(|(k, v)| (k.clone(), Secret::new(v.as_bytes())))
            .collect();
        match tokio::time::timeout(
            self.deps.settings.request_check_timeout,
            provisioner.check_request(&ctx),
        )
        .await
        {
            Ok(r) => r?,
            Err(_) => {
                return Err(ValidationError::new(
                    "parameters",
                    "the provisioner's checks did not finish in time",
                )
                .into())
            }
        }

        let now = crate::clock::now();
        let who = actor.to_string();
        let cluster = Cluster {
            id,
            tenant_id: tenant.id,
            tenant_slug: tenant.slug.as_str().to_owned(),
            name,
            template_id: Some(t.id),
            template_name: t.name.clone(),
            provider_id: provider.id,
            provider_kind: provider.kind,
            state: ClusterState::Provisioning,
            parameters: params,
            node_count,
            endpoint: None,
            provisioner_state: serde_json::Value::Null,
            error: None,
            expires_at: quota
                .cluster_ttl_hours
                .map(|h| now + chrono::Duration::hours(i64::from(h))),
            created_by: who.clone(),
            created_at: now,
            updated_at: now,
        };
        let op = Operation::new(
            id,
            OperationKind::Create,
            None,
            &who,
            now,
            chrono::Duration::minutes(i64::from(t.timeout_minutes)),
        );
        for (k, v) in &ctx.param_secrets {
            self.deps
                .vault
                .put(&names::cluster_param(tenant.id, id, k), v)
                .await?;
        }
        let event = ClusterEvent::new(
            id,
            Some(op.id),
            EventKind::State,
            format!("Requested by {who} from template {}", t.name),
            now,
        );
        let audit = AuditEvent::success(actor, action::CLUSTER_CREATE, cluster.name.as_str())
            .in_tenant(tenant.id)
            .with_detail(format!("template {}, provider {}", t.name, provider.name));
        if let Err(e) = self
            .deps
            .store
            .create_cluster(&cluster, &op, &event, &audit)
            .await
        {
            for k in ctx.param_secrets.keys() {
                let _ = self
                    .deps
                    .vault
                    .delete(&names::cluster_param(tenant.id, id, k))
                    .await;
            }
            return Err(e);
        }
        tracing::info!(cluster = %cluster.name, tenant = %tenant.slug, "cluster requested");
        Ok((cluster, op))
    }

    /// What the cluster's provider can do with its current settings (nothing, when this
    /// portal has no provisioner of its kind or the provider is gone).
    async fn capabilities_of(&self, cluster: &Cluster) -> Result<Capabilities> {
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
        let found = match Uuid::parse_str(id.trim()) {
            Ok(uuid) => match self.deps.store.cluster(uuid).await {
                Ok(c) => Some(c),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        let tenant = found.as_ref().map(|c| c.tenant_id);
        let error = match found {
            Some(c) => match policy::check(actor, Permission::ViewTenant(c.tenant_id)) {
                Ok(()) => return Ok(c),
                Err(Error::Unauthenticated) => Error::Unauthenticated,
                Err(_) => Error::NotFound("cluster"),
            },
            None if actor.identity().is_none() && !actor.is_trusted() => Error::Unauthenticated,
            None => Error::NotFound("cluster"),
        };
        self.guard
            .audit_refusal(actor, action, id, tenant, &error)
            .await?;
        Err(error)
    }

    pub async fn cluster_detail(&self, actor: &Actor, id: &str) -> Result<ClusterDetail> {
        let cluster = self
            .visible_cluster(actor, id, action::CLUSTER_VIEW)
            .await?;
        let capabilities = self.capabilities_of(&cluster).await?;
        let operations = self.deps.store.operations_of(cluster.id, 10).await?;
        let events = self.deps.store.events_of(cluster.id, None, 300).await?;
        let (mut node_range, mut version_options) = (None, Vec::new());
        if capabilities.scale || capabilities.upgrade {
            let (schema, fixed, _) = self.template_schema(&cluster).await?;
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
        let admin_access = self.admin.admin_access_of(&cluster).await?;
        Ok(ClusterDetail {
            node_range,
            version_options,
            admin_access,
            admin_kubeconfig: policy::check(actor, Permission::AdminKubeconfig).is_ok(),
            cluster,
            capabilities,
            operations,
            events,
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

    async fn enqueue(
        &self,
        actor: &Actor,
        id: &str,
        kind: OperationKind,
        target: Option<String>,
        verb: &str,
    ) -> Result<Operation> {
        let cluster = self.visible_cluster(actor, id, verb).await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let result = self.try_enqueue(actor, &cluster, kind, target, verb).await;
        self.guard
            .audited(
                actor,
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn try_enqueue(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        kind: OperationKind,
        target: Option<String>,
        verb: &str,
    ) -> Result<Operation> {
        let caps = self.capabilities_of(cluster).await?;
        let state = match kind {
            OperationKind::Delete => ClusterState::Deleting,
            OperationKind::Scale if !caps.scale => {
                return Err(Error::Conflict(format!(
                    "{} clusters cannot be scaled",
                    cluster.provider_kind
                )))
            }
            OperationKind::Upgrade if !caps.upgrade => {
                return Err(Error::Conflict(format!(
                    "{} clusters cannot be upgraded",
                    cluster.provider_kind
                )))
            }
            _ if cluster.state != ClusterState::Ready => {
                return Err(Error::Conflict(format!(
                    "the cluster is {}; it can be changed when Ready",
                    cluster.state.label()
                )))
            }
            _ => ClusterState::Updating,
        };
        let target = match (kind, target) {
            (OperationKind::Scale, Some(n)) => Some(
                self.check_against_template(cluster, "node_count", &n)
                    .await?,
            ),
            (OperationKind::Upgrade, Some(v)) => Some(
                self.check_against_template(cluster, "kubernetes_version", &v)
                    .await?,
            ),
            (_, target) => target,
        };
        // The node quota of a scale is checked by the store, in the transaction that queues it.
        let now = crate::clock::now();
        let who = actor.to_string();
        let timeout = match cluster.template_id {
            Some(t) => self
                .deps
                .store
                .template(t)
                .await
                .map(|t| t.timeout_minutes)
                .unwrap_or(60),
            None => 60,
        };
        let op = Operation::new(
            cluster.id,
            kind,
            target.clone(),
            &who,
            now,
            chrono::Duration::minutes(i64::from(timeout)),
        );
        let what = match (&kind, &target) {
            (OperationKind::Scale, Some(n)) => format!("Scale to {n} nodes requested by {who}"),
            (OperationKind::Upgrade, Some(v)) => format!("Upgrade to {v} requested by {who}"),
            _ => format!("Deletion requested by {who}"),
        };
        let event = ClusterEvent::new(cluster.id, Some(op.id), EventKind::State, what, now);
        let mut audit =
            AuditEvent::success(actor, verb, cluster.name.as_str()).in_tenant(cluster.tenant_id);
        if let Some(t) = &target {
            audit = audit.with_detail(t.clone());
        }
        self.deps
            .store
            .enqueue_operation(&op, state, &event, &audit)
            .await?;
        Ok(op)
    }

    /// A scale or upgrade target checked against what the cluster's template allows: a
    /// parameter the template fixes cannot change, and a new value must be within the
    /// template's range or among its options (the provisioner's schema when the template is
    /// gone). Returns the value as the schema normalises it.
    async fn check_against_template(
        &self,
        cluster: &Cluster,
        name: &'static str,
        value: &str,
    ) -> Result<String> {
        let (schema, fixed, by) = self.template_schema(cluster).await?;
        if let Some(v) = fixed.get(name) {
            if v != value {
                return Err(ValidationError::new(
                    name,
                    format!("is fixed at {v} by template {by}"),
                )
                .into());
            }
        }
        let Some(spec) = schema.get(name) else {
            return Ok(value.to_owned());
        };
        let one = ParamSchema::new(vec![spec.clone()]);
        let input: Params = [(name.to_owned(), value.to_owned())].into();
        let checked = one.validate(&input)?;
        Ok(checked
            .get(name)
            .cloned()
            .unwrap_or_else(|| value.to_owned()))
    }

    /// The cluster parameters its template allows (refined schema), the values it fixes, and
    /// the template's name; the provisioner's schema when the template is gone.
    async fn template_schema(&self, cluster: &Cluster) -> Result<(ParamSchema, Params, String)> {
        let provisioner = self.catalog.provisioner(cluster.provider_kind)?;
        let template = match cluster.template_id {
            Some(id) => match self.deps.store.template(id).await {
                Ok(t) => Some(t),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        Ok(match template {
            Some(t) => {
                let (schema, fixed) = refined_schema(provisioner.as_ref(), &t)?;
                (schema, fixed, t.name)
            }
            None => (provisioner.cluster_schema(), Params::new(), String::new()),
        })
    }

    /// Queues the deletion of a cluster.
    pub async fn delete_cluster(&self, actor: &Actor, id: &str) -> Result<Operation> {
        self.enqueue(
            actor,
            id,
            OperationKind::Delete,
            None,
            action::CLUSTER_DELETE,
        )
        .await
    }

    /// Queues a change of the node count (provisioners that can scale).
    pub async fn scale_cluster(&self, actor: &Actor, id: &str, nodes: u32) -> Result<Operation> {
        if !(1..=1000).contains(&nodes) {
            return Err(ValidationError::new("node_count", "must be between 1 and 1000").into());
        }
        self.enqueue(
            actor,
            id,
            OperationKind::Scale,
            Some(nodes.to_string()),
            action::CLUSTER_SCALE,
        )
        .await
    }

    /// Queues a Kubernetes upgrade (provisioners that can upgrade).
    pub async fn upgrade_cluster(
        &self,
        actor: &Actor,
        id: &str,
        version: &str,
    ) -> Result<Operation> {
        let v = version.trim();
        if v.is_empty()
            || v.len() > 20
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        {
            return Err(ValidationError::new(
                "kubernetes_version",
                "must look like 1.34 or v1.34.2",
            )
            .into());
        }
        self.enqueue(
            actor,
            id,
            OperationKind::Upgrade,
            Some(v.to_owned()),
            action::CLUSTER_UPGRADE,
        )
        .await
    }
}
