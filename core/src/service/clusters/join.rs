//! Worker nodes for hosted clusters: the `kubeadm join` command with a bootstrap token, and
//! revoking a token. Only for clusters whose control plane KQueen runs (kind `hosted`): the
//! nodes are the tenant's own machines.

use std::time::Duration;

use super::Clusters;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterState, ProviderKind};
use crate::hosted::join::{self, JoinError, JoinInfo};
use crate::policy::Permission;
use crate::{Actor, Error, Result};

/// How long a join token lets machines join.
const JOIN_TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);

fn join_error(e: JoinError) -> Error {
    match e {
        JoinError::Invalid(m) => Error::Invalid(crate::ValidationError::new("token", m)),
        JoinError::Kube(e) => {
            Error::Conflict(format!("the cluster did not answer ({e}); try again"))
        }
    }
}

impl Clusters {
    /// The cluster, when the actor may manage it and it takes nodes through KQueen.
    async fn joinable(&self, actor: &Actor, id: &str, what: &str) -> Result<Cluster> {
        let cluster = self.visible_cluster(actor, id, what).await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                what,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let refusal = if cluster.provider_kind != ProviderKind::Hosted {
            Some("only hosted clusters take worker nodes through KQueen".to_owned())
        } else if cluster.state != ClusterState::Ready {
            Some(format!(
                "the cluster is {}; nodes join when it is Ready",
                cluster.state.label()
            ))
        } else {
            None
        };
        match refusal {
            Some(m) => {
                let e = Error::Conflict(m);
                self.guard
                    .audit_refusal(
                        actor,
                        what,
                        cluster.name.as_str(),
                        Some(cluster.tenant_id),
                        &e,
                    )
                    .await?;
                Err(e)
            }
            None => Ok(cluster),
        }
    }

    /// What a worker node runs to join the hosted cluster: `kubeadm join` with a bootstrap
    /// token valid for a day (a token with an hour or more left is handed out again).
    /// Audited with the token's id and expiry, never its secret.
    pub async fn join_info(&self, actor: &Actor, id: &str) -> Result<JoinInfo> {
        let cluster = self.joinable(actor, id, action::CLUSTER_JOIN).await?;
        let result = async {
            let (client, parsed) = self.admin.admin_client(&cluster).await?;
            let endpoint = parsed.endpoint();
            let ca = endpoint
                .ca_data
                .as_deref()
                .and_then(|d| {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD.decode(d).ok()
                })
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| Error::Corrupt("the stored kubeconfig has no cluster CA".into()))?;
            // The version parameter, else what create chose (the newest offered then).
            let chosen = cluster
                .provisioner_state
                .get("version")
                .and_then(|v| v.as_str());
            let version = cluster
                .parameters
                .get("kubernetes_version")
                .map(String::as_str)
                .filter(|v| !v.trim().is_empty())
                .or(chosen)
                .and_then(crate::provisioner::hosted::parse_minor)
                .ok_or_else(|| {
                    Error::Corrupt("the cluster's Kubernetes version is not known".into())
                })?;
            join::prepare(client, &endpoint.server, &ca, version, JOIN_TOKEN_TTL)
                .await
                .map_err(join_error)
        }
        .await;
        let info = self
            .guard
            .audited(
                actor,
                action::CLUSTER_JOIN,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await?;
        let audit = AuditEvent::success(actor, action::CLUSTER_JOIN, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!(
                "join token {} until {}",
                info.token_id,
                info.expires_at.to_rfc3339()
            ));
        self.deps.store.record_audit(&audit).await?;
        Ok(info)
    }

    /// Revokes a join token: machines that have not joined yet cannot join with it.
    /// Whether it existed.
    pub async fn revoke_join_token(&self, actor: &Actor, id: &str, token_id: &str) -> Result<bool> {
        let what = action::CLUSTER_JOIN_REVOKE;
        let cluster = self.joinable(actor, id, what).await?;
        let result = async {
            let (client, _) = self.admin.admin_client(&cluster).await?;
            join::revoke(client, token_id).await.map_err(join_error)
        }
        .await;
        let existed = self
            .guard
            .audited(
                actor,
                what,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await?;
        let audit = AuditEvent::success(actor, what, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!(
                "join token {token_id}{}",
                if existed { "" } else { " (there was none)" }
            ));
        self.deps.store.record_audit(&audit).await?;
        Ok(existed)
    }
}
