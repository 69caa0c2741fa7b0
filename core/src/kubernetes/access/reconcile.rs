//! The access sweep of one cluster: every user KQueen gave a kubeconfig gets their role in
//! every namespace open to the tenant (new namespaces included), nothing in the others; old
//! cluster-wide bindings are removed; long-lived token Secrets are disarmed. Users keep the
//! kubeconfig they have: bindings change, tokens do not.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{Api, ListParams};

use super::bindings::{sync_cluster_bindings, sync_role_bindings, BindingChanges, UserBindings};
use super::legacy_tokens::disarm_legacy_tokens;
use super::namespaces::open_namespaces;
use super::objects::{map_error, CORE_NOT_SERVED, RBAC_NOT_SERVED};
use super::shared::ensure_shared_roles;
use super::USERS_NAMESPACE;
use super::{service_account_name, AccessError, RoleMap, MANAGED_BY, MANAGED_BY_LABEL};
use crate::cluster::AdminAccess;
use crate::identity::Role;

/// A user who holds a kubeconfig for the cluster, with the role it was issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub username: String,
    pub tenant: String,
    pub role: Role,
}

/// What one sweep of a cluster changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessChanges {
    pub bindings: BindingChanges,
    pub tokens_disarmed: usize,
    /// KQueen's shared ClusterRoles or their bindings were created or corrected.
    pub shared_roles_written: bool,
}

impl AccessChanges {
    /// Nothing was changed.
    pub fn is_empty(&self) -> bool {
        *self == AccessChanges::default()
    }

    /// One line for the audit log and the cluster's timeline.
    pub fn summary(&self) -> String {
        let b = &self.bindings;
        let mut parts = Vec::new();
        if !b.bound_in.is_empty() {
            let names: Vec<&str> = b.bound_in.iter().map(String::as_str).collect();
            parts.push(format!(
                "bound users in {} namespace(s): {}",
                names.len(),
                names.join(", ")
            ));
        }
        if b.role_bindings_removed > 0 {
            parts.push(format!(
                "removed {} role binding(s)",
                b.role_bindings_removed
            ));
        }
        if !b.cluster_bindings_removed.is_empty() {
            let names: Vec<&str> = b
                .cluster_bindings_removed
                .iter()
                .map(String::as_str)
                .collect();
            parts.push(format!(
                "removed the cluster-wide binding(s) of {}",
                names.join(", ")
            ));
        }
        if b.cluster_bindings_written > 0 {
            parts.push(format!(
                "bound {} tenant admin(s) to cluster-admin",
                b.cluster_bindings_written
            ));
        }
        if self.tokens_disarmed > 0 {
            parts.push(format!(
                "disarmed {} long-lived token Secret(s)",
                self.tokens_disarmed
            ));
        }
        if self.shared_roles_written {
            parts.push("wrote KQueen's shared cluster roles".into());
        }
        if parts.is_empty() {
            "nothing to change".into()
        } else {
            parts.join("; ")
        }
    }
}

/// Sweeps one cluster's per-user access for `grants` (every user with a kubeconfig for it)
/// under `admin_access` for tenant admins.
#[tracing::instrument(skip_all, fields(users = grants.len()))]
pub async fn reconcile_access(
    client: kube::Client,
    grants: &[Grant],
    role_map: &RoleMap,
    admin_access: AdminAccess,
) -> Result<AccessChanges, AccessError> {
    let users: Vec<UserBindings> = grants
        .iter()
        .map(|g| {
            UserBindings::new(
                service_account_name(&g.username),
                &g.username,
                &g.tenant,
                g.role,
                role_map,
                admin_access,
            )
        })
        .collect();
    let mut changes = AccessChanges {
        shared_roles_written: ensure_shared_roles(&client).await?,
        ..AccessChanges::default()
    };
    let namespaces = open_namespaces(&client).await?;
    let accounts = existing_accounts(&client).await?;
    let sa_exists = |sa: &str| accounts.contains(sa);
    let managed = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));

    let role_bindings: Api<RoleBinding> = Api::all(client.clone());
    let existing = role_bindings
        .list(&managed)
        .await
        .map_err(|e| map_error(&e, "list role bindings", RBAC_NOT_SERVED))?
        .items;
    changes.bindings =
        sync_role_bindings(&client, &users, &namespaces, existing, &sa_exists).await?;

    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let existing = cluster_bindings
        .list(&managed)
        .await
        .map_err(|e| map_error(&e, "list cluster role bindings", RBAC_NOT_SERVED))?
        .items;
    changes
        .bindings
        .merge(sync_cluster_bindings(&client, &users, existing, &sa_exists).await?);
    changes.tokens_disarmed = disarm_legacy_tokens(&client, None).await?;
    if !changes.is_empty() {
        tracing::info!(summary = %changes.summary(), "cluster access swept");
    }
    Ok(changes)
}

/// Names of the ServiceAccounts in `kqueen-users`.
async fn existing_accounts(client: &kube::Client) -> Result<BTreeSet<String>, AccessError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), USERS_NAMESPACE);
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|sa| sa.metadata.name)
            .collect()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(BTreeSet::new()),
        Err(e) => Err(map_error(&e, "list service accounts", CORE_NOT_SERVED)),
    }
}
