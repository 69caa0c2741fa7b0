//! The live clusters a rollout may take, as the planner sees them ([`Candidate`]).

use std::collections::HashMap;

use uuid::Uuid;

use super::Rollouts;
use crate::cluster::{Cluster, ClusterFilter, Template};
use crate::inventory::fleet::FleetFilter;
use crate::page::Page;
use crate::rollout::plan::{picked, Candidate};
use crate::rollout::{RolloutFilter, MAX_CLUSTERS};
use crate::Result;

/// The version a cluster runs as KQueen knows it: its `kubernetes_version` parameter, else
/// what its provisioner chose at create, else `reported` (what its API server said at the
/// last inventory sync).
pub(super) fn version_of(cluster: &Cluster, reported: Option<&str>) -> Option<String> {
    cluster
        .parameters
        .get("kubernetes_version")
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            cluster
                .provisioner_state
                .get("version")
                .and_then(|v| v.as_str())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        })
        .or_else(|| reported.map(str::to_owned))
}

impl Rollouts {
    /// The live clusters of `tenant` (None: the fleet) that `filter` picks, with what an
    /// upgrade to `target` would say of each; at most one more than [`MAX_CLUSTERS`] (the
    /// caller refuses more).
    pub(super) async fn candidates(
        &self,
        tenant: Option<&crate::tenant::Tenant>,
        filter: &RolloutFilter,
        target: &str,
    ) -> Result<Vec<Candidate>> {
        let store = &self.deps.store;
        let clusters_filter = ClusterFilter {
            tenant: tenant.map(|t| t.slug.to_string()),
            ..ClusterFilter::default()
        };
        let fleet = FleetFilter {
            tenant: clusters_filter.tenant.clone(),
            ..FleetFilter::default()
        };
        let reported: HashMap<Uuid, (String, Option<String>)> = store
            .fleet_clusters(&fleet, None)
            .await?
            .into_iter()
            .map(|c| (c.id, (c.provider, c.api_version)))
            .collect();
        let open: HashMap<Uuid, Uuid> = store.clusters_in_rollouts().await?.into_iter().collect();
        let mut templates: HashMap<Uuid, Option<Template>> = HashMap::new();
        let mut out = Vec::new();
        let page_size = Page::MAX_LIMIT;
        let mut offset = 0;
        // Bounded by the fleet's size (pages of live clusters), and by what a rollout takes.
        while out.len() <= MAX_CLUSTERS {
            let (clusters, _) = store
                .list_clusters(&clusters_filter, None, Page::new(page_size, offset))
                .await?;
            let last = clusters.len() < usize::try_from(page_size).unwrap_or(usize::MAX);
            for c in clusters {
                let (provider, api) = reported.get(&c.id).cloned().unwrap_or_default();
                let mut candidate = Candidate {
                    version: version_of(&c, api.as_deref()),
                    cluster_id: c.id,
                    name: c.name.to_string(),
                    tenant_id: c.tenant_id,
                    tenant: c.tenant_slug.clone(),
                    provider,
                    state: c.state,
                    production: c.production,
                    refusal: None,
                    in_rollout: open.get(&c.id).copied(),
                };
                // What the filter does not pick costs no provider or template read.
                if !picked(filter, &candidate) {
                    continue;
                }
                let template = match c.template_id {
                    Some(id) => match templates.get(&id) {
                        Some(t) => t.clone(),
                        None => {
                            let t = self.clusters.template_of(&c).await?;
                            templates.insert(id, t.clone());
                            t
                        }
                    },
                    None => None,
                };
                candidate.refusal = self
                    .clusters
                    .upgrade_refusal(&c, template.as_ref(), target)
                    .await?;
                out.push(candidate);
            }
            if last {
                break;
            }
            offset += page_size;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_comes_from_the_parameter_the_provisioner_or_the_api_server() {
        let mut c = Cluster {
            id: Uuid::nil(),
            tenant_id: Uuid::nil(),
            tenant_slug: "t".into(),
            name: crate::cluster::ClusterName::parse("c").unwrap_or_else(|e| panic!("{e}")),
            template_id: None,
            template_name: String::new(),
            provider_id: Uuid::nil(),
            provider_kind: crate::cluster::ProviderKind::Hosted,
            state: crate::cluster::ClusterState::Ready,
            parameters: Default::default(),
            node_count: 0,
            endpoint: None,
            provisioner_state: serde_json::json!({"version": "1.20"}),
            error: None,
            expires_at: None,
            production: false,
            created_by: String::new(),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        };
        assert_eq!(version_of(&c, Some("v1.20.2")).as_deref(), Some("1.20"));
        c.parameters
            .insert("kubernetes_version".into(), " 1.21 ".into());
        assert_eq!(version_of(&c, None).as_deref(), Some("1.21"));
        c.parameters.clear();
        c.provisioner_state = serde_json::Value::Null;
        assert_eq!(version_of(&c, Some("v1.20.2")).as_deref(), Some("v1.20.2"));
        assert_eq!(version_of(&c, None), None);
    }
}
