//! Requesting a cluster: the template's refinements and the tenant's quota, then the create
//! operation.

use uuid::Uuid;

use super::new_cluster::NewCluster;
use super::Clusters;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, ClusterName, ClusterRequest, EventKind, Operation};
use crate::policy::Permission;
use crate::provisioner::{OpContext, Params};
use crate::service::tenants::Tenancy;
use crate::tenant::Tenant;
use crate::vault::names;
use crate::vault::Secret;
use crate::{Actor, Error, Result, ValidationError};

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

    pub(super) async fn try_request_cluster(
        &self,
        actor: &Actor,
        tenant: &Tenant,
        req: &ClusterRequest,
    ) -> Result<(Cluster, Operation)> {
        let name = ClusterName::parse(&req.name)?;
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
        let (cluster, op) = NewCluster {
            id,
            tenant,
            name,
            template: t,
            provider: &provider,
            parameters: params,
            node_count,
            provisioner_state: serde_json::Value::Null,
            expires_at: quota
                .cluster_ttl_hours
                .map(|h| now + chrono::Duration::hours(i64::from(h))),
        }
        .build(&who, now);
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
}
