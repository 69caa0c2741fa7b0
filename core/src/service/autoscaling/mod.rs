//! Autoscaling of clusters' worker nodes ([`crate::autoscale`]): operators and tenant admins
//! turn it on with a minimum and a maximum (a tenant admin's maximum within what the tenant's
//! node quota leaves), members see it, and the engine's periodic job takes a turn at every
//! autoscaled cluster on one replica at a time (`turn.rs`).

mod turn;

use chrono::{DateTime, Utc};

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::autoscale::{AutoscaleSettings, Autoscaling, Sample};
use crate::cluster::Cluster;
use crate::deps::Deps;
use crate::policy::{self, Permission};
use crate::{Actor, Error, Result, ValidationError};

/// Samples shown at most (the newest).
const SAMPLES_SHOWN: u32 = 2000;

/// A cluster's autoscaling as its page and the API show it.
#[derive(Debug, Clone)]
pub struct AutoscalingView {
    pub cluster: Cluster,
    /// None: autoscaling is off.
    pub autoscaling: Option<Autoscaling>,
    /// Node counts over the last [`crate::autoscale::HISTORY_DAYS`], oldest first.
    pub samples: Vec<Sample>,
    /// Whether the cluster's provider can scale (autoscaling can be turned on).
    pub can_scale: bool,
    /// Whether the actor may change it.
    pub can_change: bool,
}

#[derive(Clone)]
pub struct Autoscaler {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    admin: ClusterAdmin,
}

impl Autoscaler {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        clusters: &Clusters,
        admin: &ClusterAdmin,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            admin: admin.clone(),
        }
    }

    /// A cluster's autoscaling and node counts over time: anyone who sees the cluster.
    pub async fn view(&self, actor: &Actor, cluster_id: &str) -> Result<AutoscalingView> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::AUTOSCALE_VIEW)
            .await?;
        let store = &self.deps.store;
        let autoscaling = store.autoscaling(cluster.id).await?;
        let since = keep_since(crate::clock::now());
        let samples = store
            .autoscale_samples(cluster.id, since, SAMPLES_SHOWN)
            .await?;
        let can_scale = self.clusters.capabilities_of(&cluster).await?.scale;
        let can_change = policy::check(actor, Permission::Autoscale(cluster.tenant_id)).is_ok();
        Ok(AutoscalingView {
            cluster,
            autoscaling,
            samples,
            can_scale,
            can_change,
        })
    }

    /// Turns autoscaling on (or changes it): operators and the tenant's admins. The bounds
    /// must be node counts the cluster's template allows, and a tenant admin's maximum must
    /// fit in what the tenant's node quota leaves for this cluster. The first turn comes at
    /// the periodic job's next run.
    pub async fn set(
        &self,
        actor: &Actor,
        cluster_id: &str,
        settings: AutoscaleSettings,
    ) -> Result<Autoscaling> {
        let cluster = self.authorized(actor, cluster_id).await?;
        let result = async {
            settings.check()?;
            if !self.clusters.capabilities_of(&cluster).await?.scale {
                return Err(Error::Conflict(format!(
                    "{} clusters cannot be scaled, so they cannot be autoscaled",
                    cluster.provider_kind
                )));
            }
            self.within_template(&cluster, &settings).await?;
            // Operators (and the system) may go beyond the quota's room: whoever sees
            // every tenant.
            if policy::check(actor, Permission::ListAllTenants).is_err() {
                self.within_quota(&cluster, &settings).await?;
            }
            let now = crate::clock::now();
            let autoscaling = Autoscaling {
                cluster_id: cluster.id,
                tenant_id: cluster.tenant_id,
                settings,
                underused: Default::default(),
                last_reason: None,
                last_turn_at: None,
                updated_by: actor.to_string(),
                updated_at: now,
            };
            let audit = AuditEvent::success(actor, action::AUTOSCALE_SET, cluster.name.as_str())
                .in_tenant(cluster.tenant_id)
                .with_detail(describe(&settings));
            self.deps
                .store
                .put_autoscaling(&autoscaling, &audit)
                .await?;
            Ok(autoscaling)
        }
        .await;
        self.guard
            .audited(
                actor,
                action::AUTOSCALE_SET,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Turns autoscaling off; the node count stays as it is. NotFound when it was off.
    pub async fn disable(&self, actor: &Actor, cluster_id: &str) -> Result<()> {
        let cluster = self.authorized(actor, cluster_id).await?;
        let audit = AuditEvent::success(actor, action::AUTOSCALE_SET, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail("autoscaling turned off");
        let result = match self.deps.store.remove_autoscaling(cluster.id, &audit).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::NotFound("autoscaling")),
            Err(e) => Err(e),
        };
        self.guard
            .audited(
                actor,
                action::AUTOSCALE_SET,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn authorized(&self, actor: &Actor, cluster_id: &str) -> Result<Cluster> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::AUTOSCALE_SET)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::Autoscale(cluster.tenant_id),
                action::AUTOSCALE_SET,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        Ok(cluster)
    }

    /// Both bounds must be node counts a scale of this cluster may ask for.
    async fn within_template(&self, cluster: &Cluster, settings: &AutoscaleSettings) -> Result<()> {
        let template = self.clusters.template_of(cluster).await?;
        for (field, n) in [
            ("min_nodes", settings.min_nodes),
            ("max_nodes", settings.max_nodes),
        ] {
            match self.clusters.check_against_template(
                cluster,
                template.as_ref(),
                "node_count",
                &n.to_string(),
            ) {
                Ok(_) => {}
                Err(Error::Invalid(v)) => {
                    return Err(ValidationError::new(
                        field,
                        format!("{n} nodes: the node count {}", v.message),
                    )
                    .into())
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A tenant admin's maximum must fit in the tenant's node quota, besides its other
    /// clusters' nodes.
    async fn within_quota(&self, cluster: &Cluster, settings: &AutoscaleSettings) -> Result<()> {
        let store = &self.deps.store;
        let quota = store.quota(cluster.tenant_id).await?;
        let Some(max) = quota.max_nodes else {
            return Ok(());
        };
        let usage = store.usage(cluster.tenant_id).await?;
        let others = usage.nodes.saturating_sub(cluster.node_count);
        let room = max.saturating_sub(others);
        if settings.max_nodes > room {
            return Err(ValidationError::new(
                "max_nodes",
                format!(
                    "the tenant's node quota ({max}) leaves room for at most {room} nodes in \
                     this cluster; an operator can set more"
                ),
            )
            .into());
        }
        Ok(())
    }
}

/// "2–6 nodes; a node under 50% used for 600 s goes" (the audit detail).
fn describe(s: &AutoscaleSettings) -> String {
    format!(
        "{}–{} nodes; a node under {}% used for {} s goes",
        s.min_nodes, s.max_nodes, s.scale_down_utilisation, s.scale_down_after_secs
    )
}

/// When a sample is old enough to be forgotten.
fn keep_since(now: DateTime<Utc>) -> DateTime<Utc> {
    now - chrono::Duration::days(crate::autoscale::HISTORY_DAYS)
}
