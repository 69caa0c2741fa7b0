//! How the service layer reaches a cluster as KQueen: its provisioner and provider settings,
//! its stored admin kubeconfig, a client built from it, and what its template grants tenant
//! admins. No policy here: every caller has checked the actor already (or is the system).

use std::sync::Arc;

use crate::cluster::{Cluster, ClusterState, Params};
use crate::deps::Deps;
use crate::provisioner::Provisioner;
use crate::vault::names::kubeconfig_name;
use crate::vault::{Secret, SecretRef};
use crate::{Error, Result};

#[derive(Clone)]
pub(crate) struct ClusterAdmin {
    deps: Deps,
}

impl ClusterAdmin {
    pub(crate) fn new(deps: Deps) -> Self {
        Self { deps }
    }

    /// The cluster's provisioner and its provider's current settings; `None` when this portal
    /// has no provisioner of its kind or the provider is gone.
    pub(crate) async fn provisioner_of(
        &self,
        cluster: &Cluster,
    ) -> Result<Option<(Arc<dyn Provisioner>, Params)>> {
        let Some(p) = self.deps.registry.get(cluster.provider_kind) else {
            return Ok(None);
        };
        match self.deps.store.provider(cluster.provider_id).await {
            Ok(provider) => Ok(Some((p, provider.config))),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What tenant admins get in `cluster`: its template's choice; the default when the
    /// cluster has no template (any more).
    pub(crate) async fn admin_access_of(
        &self,
        cluster: &Cluster,
    ) -> Result<crate::cluster::AdminAccess> {
        let Some(id) = cluster.template_id else {
            return Ok(crate::cluster::AdminAccess::default());
        };
        match self.deps.store.template(id).await {
            Ok(t) => Ok(t.admin_access),
            Err(Error::NotFound(_)) => Ok(crate::cluster::AdminAccess::default()),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn admin_client(
        &self,
        cluster: &Cluster,
    ) -> Result<(kube::Client, crate::kubernetes::ParsedKubeconfig)> {
        let admin = self.stored_kubeconfig(cluster).await?;
        // Checked again at every use: the provider may no longer allow credential plugins.
        let allow_exec = self
            .provisioner_of(cluster)
            .await?
            .is_some_and(|(p, config)| p.allows_exec(&config));
        let parsed = parse_stored(&admin, allow_exec)?;
        let client = crate::kubernetes::client(&parsed, self.deps.settings.request_check_timeout)
            .await
            .map_err(|e| Error::Conflict(format!("cannot reach the cluster: {e}")))?;
        Ok((client, parsed))
    }

    pub(crate) async fn stored_kubeconfig(&self, cluster: &Cluster) -> Result<Secret> {
        if cluster.state == ClusterState::Provisioning {
            return Err(Error::Conflict(
                "the cluster is still being provisioned".into(),
            ));
        }
        self.deps
            .vault
            .get(&SecretRef::tenant(
                cluster.tenant_id,
                kubeconfig_name(cluster.id),
            ))
            .await?
            .ok_or_else(|| Error::Conflict("no kubeconfig is stored for this cluster".into()))
    }
}

/// A stored admin kubeconfig, parsed (credential plugins accepted when `allow_exec`).
pub(crate) fn parse_stored(
    admin: &Secret,
    allow_exec: bool,
) -> Result<crate::kubernetes::ParsedKubeconfig> {
    let text = std::str::from_utf8(admin.expose())
        .map_err(|_| Error::Corrupt("stored kubeconfig is not UTF-8".into()))?;
    crate::kubernetes::parse_kubeconfig(text, None, allow_exec)
        .map_err(|e| Error::Conflict(format!("the stored kubeconfig is unusable: {}", e.message)))
}

/// What a failure of the cluster's access API means to the caller.
pub(crate) fn access_error(e: crate::kubernetes::AccessError) -> Error {
    use crate::kubernetes::AccessError as A;
    match e {
        A::Invalid(v) => Error::Invalid(v),
        A::Unsupported(reason) => Error::Conflict(format!(
            "this cluster cannot issue per-user kubeconfigs: {reason}"
        )),
        A::Transient(reason) => {
            Error::Conflict(format!("the cluster did not answer ({reason}); try again"))
        }
    }
}
