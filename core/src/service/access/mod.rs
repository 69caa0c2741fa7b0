//! Kubeconfigs and per-user access: the admin kubeconfig (operators), personal kubeconfigs
//! (a ServiceAccount per user, bound by [`crate::kubernetes::issue_user_kubeconfig`]),
//! revocation, and what the engine needs to reach a cluster with its stored kubeconfig.

use uuid::Uuid;

use super::cluster_admin::{access_error, ClusterAdmin};
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterState};
use crate::deps::Deps;
use crate::kubernetes::ClusterEndpoint;
use crate::policy::{self, Permission};
use crate::vault::Secret;
use crate::{Actor, Error, Result, ValidationError};

mod credential;

pub use credential::ClusterCredential;

/// A downloaded kubeconfig.
#[derive(Debug, Clone)]
pub struct KubeconfigDownload {
    pub file_name: String,
    pub yaml: Secret,
    /// Per-user kubeconfigs expire; the admin one does not.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What an issued kubeconfig may do, for the audit detail: "edit in 3 namespace(s): a, b, c"
/// or "cluster-admin".
fn granted_scope(
    req: &crate::kubernetes::UserAccess,
    issued: &crate::kubernetes::IssuedKubeconfig,
) -> String {
    if issued.cluster_admin {
        return format!(
            "{}, per the template",
            crate::kubernetes::CLUSTER_ADMIN_ROLE
        );
    }
    const SHOWN: usize = 10;
    let names: Vec<&str> = issued
        .namespaces
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect();
    let more = issued.namespaces.len().saturating_sub(SHOWN);
    format!(
        "{} in {} namespace(s){}{}{}",
        req.role_map.cluster_role(req.role),
        issued.namespaces.len(),
        if names.is_empty() { "" } else { ": " },
        names.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
    )
}

/// Kubeconfigs and per-user access to clusters.
#[derive(Clone)]
pub struct Access {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    admin: ClusterAdmin,
}

impl Access {
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
}

impl Access {
    /// The admin kubeconfig of a cluster (operators). Audited.
    pub async fn admin_kubeconfig(&self, actor: &Actor, id: &str) -> Result<KubeconfigDownload> {
        let (cluster, yaml) = self.authorized_admin_kubeconfig(actor, id).await?;
        let audit = AuditEvent::success(actor, action::KUBECONFIG_ADMIN, cluster.name.as_str())
            .in_tenant(cluster.tenant_id);
        self.deps.store.record_audit(&audit).await?;
        Ok(KubeconfigDownload {
            file_name: format!("{}-{}-admin.kubeconfig", cluster.tenant_slug, cluster.name),
            yaml,
            expires_at: None,
        })
    }

    /// Cluster `id` and its stored admin kubeconfig, once `actor` may see the one and have
    /// the other (refusals audited as `kubeconfig.admin`); the caller audits what it hands out.
    async fn authorized_admin_kubeconfig(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<(crate::cluster::Cluster, crate::vault::Secret)> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::KUBECONFIG_ADMIN)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::AdminKubeconfig,
                action::KUBECONFIG_ADMIN,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let yaml = self.admin.stored_kubeconfig(&cluster).await?;
        Ok((cluster, yaml))
    }

    /// The caller's kubeconfig: operators get the stored admin kubeconfig; tenant members a
    /// per-user, short-lived one whose identity the cluster sees (a ServiceAccount in
    /// `kqueen-users` bound to their tenant role, a token from the TokenRequest API).
    pub async fn kubeconfig(&self, actor: &Actor, id: &str) -> Result<KubeconfigDownload> {
        if policy::check(actor, Permission::AdminKubeconfig).is_ok() {
            return self.admin_kubeconfig(actor, id).await;
        }
        self.for_member(actor, id, "", |cluster, issued, _| KubeconfigDownload {
            file_name: format!(
                "{}-{}-{}.kubeconfig",
                cluster.tenant_slug, cluster.name, issued.service_account
            ),
            yaml: issued.yaml,
            expires_at: Some(issued.expires_at),
        })
        .await
    }

    /// Issues the calling member their own access to cluster `id` (see
    /// [`Access::kubeconfig`]) and hands what was issued to `make`; audited as a kubeconfig
    /// issue whatever the outcome, `purpose` appended to the detail.
    async fn for_member<T>(
        &self,
        actor: &Actor,
        id: &str,
        purpose: &str,
        make: impl FnOnce(&Cluster, crate::kubernetes::IssuedKubeconfig, ClusterEndpoint) -> T,
    ) -> Result<T> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::KUBECONFIG_ISSUE)
            .await?;
        let Some(who) = actor.identity() else {
            return Err(Error::Unauthenticated);
        };
        let Some(role) = who.role_in(cluster.tenant_id) else {
            return Err(Error::NotFound("cluster"));
        };
        let result = self
            .issue_user_kubeconfig(actor, &cluster, &who.username, who.user_id, role, purpose)
            .await
            .map(|(issued, endpoint)| make(&cluster, issued, endpoint));
        self.guard
            .audited(
                actor,
                action::KUBECONFIG_ISSUE,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn issue_user_kubeconfig(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        username: &str,
        user_id: Uuid,
        role: crate::identity::Role,
        purpose: &str,
    ) -> Result<(crate::kubernetes::IssuedKubeconfig, ClusterEndpoint)> {
        if cluster.state != ClusterState::Ready && cluster.state != ClusterState::Updating {
            return Err(Error::Conflict(format!(
                "the cluster is {}; kubeconfigs are issued when it is Ready",
                cluster.state.label()
            )));
        }
        let (client, parsed) = self.admin.admin_client(cluster).await?;
        let mut req = crate::kubernetes::UserAccess::new(
            username,
            &cluster.tenant_slug,
            role,
            self.deps.settings.user_token_ttl,
        );
        req.context_name = Some(format!("{}-{}", cluster.tenant_slug, cluster.name));
        req.admin_access = self.admin.admin_access_of(cluster).await?;
        let issued = tokio::time::timeout(
            self.deps.settings.request_check_timeout * 2,
            crate::kubernetes::issue_user_kubeconfig(client, &parsed.endpoint(), &req),
        )
        .await
        .map_err(|_| Error::Conflict("the cluster did not answer in time; try again".into()))?
        .map_err(access_error)?;
        let audit = AuditEvent::success(actor, action::KUBECONFIG_ISSUE, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!(
                "service account {}, role {role} ({}), expires {}{purpose}",
                issued.service_account,
                granted_scope(&req, &issued),
                issued.expires_at.to_rfc3339()
            ));
        self.deps
            .store
            .put_access(
                cluster.id,
                user_id,
                &issued.service_account,
                role.as_str(),
                issued.expires_at,
                &audit,
            )
            .await?;
        Ok((issued, parsed.endpoint()))
    }

    /// A client that acts in `cluster` with exactly the rights `user_id`'s personal
    /// kubeconfig gives: their ServiceAccount's short-lived token, issued (and audited, as
    /// `system` on their behalf) like a download. Used to apply what a member deploys, so
    /// that the cluster's RBAC, not KQueen, decides what they may create. Also returns how
    /// the identity reads in messages.
    pub(crate) async fn member_client(
        &self,
        cluster: &Cluster,
        user_id: Uuid,
    ) -> Result<(kube::Client, String)> {
        let user = self.deps.store.user_by_id(user_id).await?;
        if user.disabled {
            return Err(Error::Conflict(format!("{} is disabled", user.username)));
        }
        let role = self
            .deps
            .store
            .memberships_of(user_id)
            .await?
            .into_iter()
            .find(|m| m.tenant_id == cluster.tenant_id)
            .map(|m| m.role)
            .ok_or_else(|| {
                Error::Conflict(format!(
                    "{} is no longer a member of the cluster's tenant",
                    user.username
                ))
            })?;
        let actor = Actor::system();
        let (issued, _) = self
            .issue_user_kubeconfig(&actor, cluster, &user.username, user_id, role, "")
            .await?;
        let text = std::str::from_utf8(issued.yaml.expose())
            .map_err(|_| Error::Corrupt("issued kubeconfig is not UTF-8".into()))?;
        let parsed = crate::kubernetes::parse_kubeconfig(text, None, false).map_err(|e| {
            Error::Conflict(format!("the issued kubeconfig is unusable: {}", e.message))
        })?;
        let client = crate::kubernetes::client(&parsed, self.deps.settings.request_check_timeout)
            .await
            .map_err(|e| Error::Conflict(format!("cannot reach the cluster: {e}")))?;
        let who = format!(
            "{} (ServiceAccount {}/{}, role {role})",
            user.username,
            crate::kubernetes::USERS_NAMESPACE,
            crate::kubernetes::service_account_name(&user.username)
        );
        Ok((client, who))
    }

    /// Revokes a user's access to a cluster (their own, or anyone's for tenant admins and
    /// operators): deletes the ServiceAccount, which invalidates every token issued to it.
    pub async fn revoke_access(&self, actor: &Actor, id: &str, user: Option<&str>) -> Result<()> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::ACCESS_REVOKE)
            .await?;
        let own = actor.identity().map(|i| i.username.as_str());
        let target = match (user.map(str::trim).filter(|u| !u.is_empty()), own) {
            (Some(u), Some(me)) if u == me => me.to_owned(),
            (None, Some(me)) => me.to_owned(),
            (Some(u), _) => {
                self.guard
                    .authorize(
                        actor,
                        Permission::ManageAccess(cluster.tenant_id),
                        action::ACCESS_REVOKE,
                        u,
                        Some(cluster.tenant_id),
                    )
                    .await?;
                u.to_owned()
            }
            (None, None) => {
                return Err(
                    ValidationError::new("user", "name the user whose access to revoke").into(),
                )
            }
        };
        let result = async {
            let user = self
                .deps
                .store
                .user_by_username(&target)
                .await?
                .ok_or_else(|| Error::Invalid(ValidationError::new("user", "no such user")))?;
            let (client, _) = self.admin.admin_client(&cluster).await?;
            let removed = crate::kubernetes::revoke_user_access(client, &target)
                .await
                .map_err(access_error)?;
            let audit = AuditEvent::success(actor, action::ACCESS_REVOKE, cluster.name.as_str())
                .in_tenant(cluster.tenant_id)
                .with_detail(format!(
                    "user {target}{}",
                    if removed { "" } else { " (had no access)" }
                ));
            if !self
                .deps
                .store
                .delete_access(cluster.id, user.id, &audit)
                .await?
                && !removed
            {
                self.deps.store.record_audit(&audit).await?;
            }
            Ok(())
        }
        .await;
        self.guard
            .audited(
                actor,
                action::ACCESS_REVOKE,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Removes every per-user ServiceAccount KQueen created in `cluster`, before KQueen
    /// forgets a cluster that goes on existing (an imported one): afterwards nobody could
    /// revoke them through KQueen. Best effort within `within`; returns the timeline line
    /// (None: there were none).
    pub(crate) async fn revoke_all_access(
        &self,
        cluster: &Cluster,
        within: std::time::Duration,
    ) -> Option<String> {
        let users = match self.deps.store.accesses_of(cluster.id).await {
            Ok(users) if users.is_empty() => return None,
            Ok(users) => users,
            Err(e) => return Some(format!("Could not list the users' ServiceAccounts: {e}")),
        };
        let work = async {
            let (client, _) = self.admin.admin_client(cluster).await?;
            crate::kubernetes::remove_all_access(client, &users)
                .await
                .map_err(access_error)?;
            Ok::<_, Error>(())
        };
        let left = "; the kubeconfigs issued to them work until they expire";
        Some(match tokio::time::timeout(within, work).await {
            Ok(Ok(())) => format!(
                "Removed the ServiceAccounts of {} user(s) from the cluster: {}",
                users.len(),
                users.join(", ")
            ),
            Ok(Err(e)) => format!("Could not remove the users' ServiceAccounts ({e}){left}"),
            Err(_) => format!(
                "The cluster did not answer in time to remove the users' ServiceAccounts{left}"
            ),
        })
    }
}
