//! Adoption (operators): the clusters a provider's infrastructure already holds (a Cluster
//! API management cluster's Clusters), and taking one into a tenant as a KQueen cluster —
//! from then on it has inventory, audit and personal kubeconfigs like any other. The take-over
//! itself runs as the cluster's create operation (the provisioner labels the cluster, follows
//! it to ready and hands over its kubeconfig).

use std::time::Duration;

use uuid::Uuid;

use super::new_cluster::NewCluster;
use super::Clusters;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, ClusterName, EventKind, Operation, Provider};
use crate::policy::Permission;
use crate::provisioner::{Discovered, OpContext, Params, ProvisionError, Provisioner};
use crate::service::templates::refined_schema;
use crate::{Actor, Error, Result, ValidationError};

/// How long listing a provider's clusters may take.
const DISCOVER_WITHIN: Duration = Duration::from_secs(30);

/// An operator's adoption of an existing cluster.
#[derive(Debug, Clone, Default)]
pub struct AdoptRequest {
    /// The tenant that gets it (slug).
    pub tenant: String,
    /// Its name in KQueen; blank: the existing cluster's own name.
    pub name: String,
    /// The template it is held to from now on (scale range, versions): one of the provider's.
    pub template: String,
    /// Which cluster ([`Discovered::reference`]).
    pub reference: String,
}

impl Clusters {
    /// The clusters a provider's infrastructure holds, adopted or not (operators).
    #[tracing::instrument(skip_all, fields(actor = %actor, provider = %provider))]
    pub async fn adoptable_clusters(
        &self,
        actor: &Actor,
        provider: &str,
    ) -> Result<Vec<Discovered>> {
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::CLUSTER_DISCOVER,
                provider,
                None,
            )
            .await?;
        let provider = self.catalog.find_provider(provider).await?;
        let (provisioner, ctx) = self.discovery_context(&provider).await?;
        discover(provisioner.as_ref(), &ctx).await
    }

    /// Adopts an existing cluster into a tenant (operators): the cluster is stored and its
    /// take-over queued as its create operation.
    #[tracing::instrument(skip_all, fields(actor = %actor, tenant = %req.tenant, reference = %req.reference))]
    pub async fn adopt_cluster(
        &self,
        actor: &Actor,
        req: AdoptRequest,
    ) -> Result<(Cluster, Operation)> {
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::CLUSTER_ADOPT,
                &req.reference,
                None,
            )
            .await?;
        let result = self.try_adopt(actor, &req).await;
        let tenant = result.as_ref().ok().map(|(c, _)| c.tenant_id);
        self.guard
            .audited(actor, action::CLUSTER_ADOPT, &req.reference, tenant, result)
            .await
    }

    async fn try_adopt(&self, actor: &Actor, req: &AdoptRequest) -> Result<(Cluster, Operation)> {
        let tenant = self
            .tenancy
            .visible_tenant(actor, req.tenant.trim(), action::CLUSTER_ADOPT)
            .await?;
        let view = match self.catalog.template(actor, req.template.trim()).await {
            Ok(v) => v,
            Err(Error::NotFound(_)) => {
                return Err(ValidationError::new("template", "no such template").into())
            }
            Err(e) => return Err(e),
        };
        let template = &view.template;
        let provider = self.deps.store.provider(template.provider_id).await?;
        let (provisioner, ctx) = match self.discovery_context(&provider).await {
            Err(Error::Conflict(why)) if !self.catalog.provisioner(provider.kind)?.adopts() => {
                return Err(ValidationError::new(
                    "template",
                    format!("template {}: {why}", template.name),
                )
                .into())
            }
            other => other?,
        };
        let reference = req.reference.trim();
        let found = discover(provisioner.as_ref(), &ctx)
            .await?
            .into_iter()
            .find(|d| d.reference == reference)
            .ok_or_else(|| {
                ValidationError::new(
                    "reference",
                    format!("provider {} holds no cluster '{reference}'", provider.name),
                )
            })?;
        if let Some(holder) = found.adopted_by {
            return Err(Error::Conflict(format!(
                "'{reference}' already belongs to KQueen cluster {holder}"
            )));
        }
        let name = match req.name.trim() {
            "" => found.name.as_str(),
            _ => req.name.as_str(),
        };
        let name = ClusterName::parse(name)?;
        // What it runs now, as the template's parameters say it (for the scale and upgrade
        // forms and the fleet's views).
        let mut parameters = Params::new();
        if let Some(v) = &found.kubernetes_version {
            parameters.insert("kubernetes_version".into(), v.clone());
        }
        if let Some(n) = found.control_plane_nodes {
            parameters.insert("control_plane_replicas".into(), n.to_string());
        }
        let node_count = found.worker_nodes.unwrap_or(0);
        parameters.insert("node_count".into(), node_count.to_string());
        let (schema, _) = refined_schema(provisioner.as_ref(), template)?;
        parameters.retain(|k, _| schema.get(k).is_some());

        let id = Uuid::now_v7();
        let now = crate::clock::now();
        let who = actor.to_string();
        let (cluster, op) = NewCluster {
            id,
            tenant: &tenant,
            name,
            template,
            provider: &provider,
            parameters,
            node_count,
            provisioner_state: serde_json::json!({ "adopt": found.reference }),
            // Adopted, not asked for: the tenant's time-to-live does not end it.
            expires_at: None,
        }
        .build(&who, now);
        let event = ClusterEvent::new(
            id,
            Some(op.id),
            EventKind::State,
            format!(
                "Adopted by {who} from {} of provider {} into template {}",
                found.reference, provider.name, template.name
            ),
            now,
        );
        let audit = AuditEvent::success(actor, action::CLUSTER_ADOPT, cluster.name.as_str())
            .in_tenant(tenant.id)
            .with_detail(format!(
                "adopted {} of provider {}, template {}",
                found.reference, provider.name, template.name
            ));
        self.deps
            .store
            .create_cluster(&cluster, &op, &event, &audit)
            .await?;
        tracing::info!(cluster = %cluster.name, tenant = %tenant.slug, "cluster adopted");
        Ok((cluster, op))
    }

    /// The provider's provisioner (one that adopts) and a context with its settings.
    async fn discovery_context(
        &self,
        provider: &Provider,
    ) -> Result<(std::sync::Arc<dyn Provisioner>, OpContext)> {
        let provisioner = self.catalog.provisioner(provider.kind)?;
        if !provisioner.adopts() {
            // The provider is what it is: not a wrong input, a request its kind cannot meet.
            return Err(Error::Conflict(format!(
                "providers of kind {} have no existing clusters to adopt",
                provider.kind
            )));
        }
        let mut ctx = OpContext::new("", "", self.deps.settings.work_dir.clone());
        ctx.provider_config = provider.config.clone();
        ctx.provider_secrets = crate::engine::provider_secrets(&self.deps.vault, provider).await?;
        Ok((provisioner, ctx))
    }
}

async fn discover(provisioner: &dyn Provisioner, ctx: &OpContext) -> Result<Vec<Discovered>> {
    match tokio::time::timeout(DISCOVER_WITHIN, provisioner.discover(ctx)).await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(ProvisionError::Unsupported(what))) => {
            Err(ValidationError::new("provider", format!("this provisioner cannot {what}")).into())
        }
        Ok(Err(e)) => Err(Error::Conflict(format!(
            "the provider's clusters cannot be listed: {e}"
        ))),
        Err(_) => Err(Error::Conflict(format!(
            "the provider's clusters cannot be listed: no answer within {} s",
            DISCOVER_WITHIN.as_secs()
        ))),
    }
}
