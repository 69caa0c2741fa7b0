//! Per-user access to a cluster: instead of handing the admin kubeconfig to tenant members,
//! KQueen gives each member a ServiceAccount of their own (in the `kqueen-users` namespace)
//! and hands out short-lived tokens from the TokenRequest API. The ServiceAccount gets its
//! tenant role (members `edit`, tenant admins `admin`) through a RoleBinding in every
//! namespace open to the tenant ([`open_to_tenant`]) — never cluster-wide, so that no member
//! reaches kube-system or the other users' credentials — plus read-only access to nodes,
//! namespaces, storage classes and CRDs and the right to create namespaces ([`READER_ROLE`],
//! [`NAMESPACE_CREATOR_ROLE`]). Tenant admins get `cluster-admin` only where their template
//! says so ([`AdminAccess::ClusterAdmin`]). Revoking deletes the ServiceAccount, which
//! invalidates every token issued for it, and its bindings. The access sweep
//! ([`reconcile_access`]) binds namespaces created since and migrates older clusters.
//!
//! [`AdminAccess::ClusterAdmin`]: crate::cluster::AdminAccess::ClusterAdmin

mod bindings;
mod legacy_tokens;
mod namespaces;
mod objects;
mod reconcile;
mod shared;
mod token;

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{Api, ListParams};
use sha2::{Digest, Sha256};

use crate::cluster::AdminAccess;
use crate::identity::Role;
use crate::kubernetes::ClusterEndpoint;
use crate::vault::Secret;
use crate::ValidationError;
use bindings::{sync_cluster_bindings, sync_role_bindings, UserBindings};
use legacy_tokens::disarm_legacy_tokens;
use objects::{
    check_cluster_role, delete_if_present, ensure_namespace, ensure_service_account, map_error,
    CORE_NOT_SERVED, RBAC_NOT_SERVED,
};
use shared::{ensure_shared_roles, remove_shared_roles};
use token::{default_context_name, request_token, user_kubeconfig};

pub use bindings::{BindingChanges, CLUSTER_ADMIN_ROLE, SERVICE_ACCOUNT_LABEL};
pub use legacy_tokens::DISARMED_TOKEN;
pub use namespaces::{
    namespaces_bound_cluster_wide, open_in_cluster, open_to_tenant, SYSTEM_PREFIX,
    TENANT_ACCESS_LABEL, TENANT_ACCESS_NONE, TENANT_ACCESS_OPEN,
};
pub use reconcile::{reconcile_access, AccessChanges, Grant};
pub use shared::{NAMESPACE_CREATOR_ROLE, READER_ROLE};

/// The namespace that holds the users' ServiceAccounts.
pub const USERS_NAMESPACE: &str = "kqueen-users";
/// Label put on everything KQueen creates in a cluster.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "kqueen";
/// Annotation with the KQueen username a ServiceAccount belongs to.
pub const USERNAME_ANNOTATION: &str = "kqueen.io/username";
/// Annotation with the tenant the access was granted for.
pub const TENANT_ANNOTATION: &str = "kqueen.io/tenant";
/// The shortest token lifetime the TokenRequest API accepts.
pub const MIN_TTL: Duration = Duration::from_secs(10 * 60);

/// Which ClusterRole each tenant role gets, bound in each namespace open to the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleMap {
    pub member: String,
    pub admin: String,
}

impl Default for RoleMap {
    /// Kubernetes' built-in user-facing roles: members `edit`, admins `admin`.
    fn default() -> Self {
        Self {
            member: "edit".into(),
            admin: "admin".into(),
        }
    }
}

impl RoleMap {
    pub fn cluster_role(&self, role: Role) -> &str {
        match role {
            Role::Member => &self.member,
            Role::Admin => &self.admin,
        }
    }
}

/// A request for one user's kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAccess {
    /// The KQueen username (recorded on the ServiceAccount).
    pub username: String,
    /// The tenant the cluster belongs to (recorded on the ServiceAccount).
    pub tenant: String,
    pub role: Role,
    /// Requested token lifetime; at least [`MIN_TTL`]. The cluster may shorten it.
    pub ttl: Duration,
    pub role_map: RoleMap,
    /// What a tenant admin gets (from the cluster's template); members always get
    /// [`RoleMap::member`] in the open namespaces.
    pub admin_access: AdminAccess,
    /// The name of the context (and of its cluster and user entries) in the kubeconfig;
    /// by default `kqueen-<tenant>-<host>`. The cluster's name is a good choice.
    pub context_name: Option<String>,
}

impl UserAccess {
    /// A request with the default [`RoleMap`] and context name.
    pub fn new(username: &str, tenant: &str, role: Role, ttl: Duration) -> Self {
        Self {
            username: username.into(),
            tenant: tenant.into(),
            role,
            ttl,
            role_map: RoleMap::default(),
            admin_access: AdminAccess::default(),
            context_name: None,
        }
    }
}

/// A kubeconfig issued for one user.
#[derive(Clone)]
pub struct IssuedKubeconfig {
    /// A complete kubeconfig (server, CA, token, context, current-context).
    pub yaml: Secret,
    /// The bearer token inside it, for clients that build their own configuration (a
    /// kubectl credential plugin).
    pub token: Secret,
    /// When the token stops working (as the cluster granted it).
    pub expires_at: DateTime<Utc>,
    /// The ServiceAccount's name in [`USERS_NAMESPACE`].
    pub service_account: String,
    /// The namespaces where the user got their role (empty with `cluster_admin`).
    pub namespaces: Vec<String>,
    /// The user got `cluster-admin` on the whole cluster.
    pub cluster_admin: bool,
}

impl fmt::Debug for IssuedKubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedKubeconfig")
            .field("yaml", &self.yaml)
            .field("expires_at", &self.expires_at)
            .field("service_account", &self.service_account)
            .field("namespaces", &self.namespaces)
            .field("cluster_admin", &self.cluster_admin)
            .finish()
    }
}

/// Why per-user access could not be given or taken back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The request itself is wrong (empty username, TTL too short).
    #[error("{0}")]
    Invalid(ValidationError),
    /// This cluster cannot do it until someone changes the cluster or KQueen's credentials
    /// for it (no TokenRequest API, RBAC forbids it…). The reason is meant for the UI.
    #[error("{0}")]
    Unsupported(String),
    /// Network trouble or a busy server: trying again later may work.
    #[error("{0}")]
    Transient(String),
}

impl AccessError {
    pub fn is_transient(&self) -> bool {
        matches!(self, AccessError::Transient(_))
    }
}

/// The ServiceAccount name for a username: a DNS-1123 label made of the username's letters
/// and digits plus a hash of the whole username, so different usernames never collide.
pub fn service_account_name(username: &str) -> String {
    let mut slug = String::new();
    for c in username.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut slug: String = slug.trim_matches('-').chars().take(40).collect();
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        slug.push_str("user");
    }
    let digest = Sha256::digest(username.as_bytes());
    let hash: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    format!("{slug}-{hash}")
}

/// The name of a user's RoleBindings (and of their ClusterRoleBinding, if any) for a
/// ServiceAccount name.
pub fn binding_name(service_account: &str) -> String {
    format!("kqueen-user-{service_account}")
}

/// Creates (or reuses) the user's ServiceAccount and binds it as [`UserAccess::role`] and
/// [`UserAccess::admin_access`] say, then asks the cluster for a token valid for `req.ttl`
/// and returns a kubeconfig built around it. `endpoint` (server, CA, TLS and proxy settings,
/// usually [`ParsedKubeconfig::endpoint`] of the stored kubeconfig) is what the user's
/// kubectl will use to reach the cluster. Safe to call again: existing objects are reused, a
/// changed role replaces the bindings, and an old cluster-wide binding is removed.
///
/// [`ParsedKubeconfig::endpoint`]: crate::kubernetes::ParsedKubeconfig::endpoint
#[tracing::instrument(skip_all, fields(sa, role = %req.role))]
pub async fn issue_user_kubeconfig(
    client: kube::Client,
    endpoint: &ClusterEndpoint,
    req: &UserAccess,
) -> Result<IssuedKubeconfig, AccessError> {
    validate(req)?;
    let sa_name = service_account_name(&req.username);
    tracing::Span::current().record("sa", sa_name.as_str());
    let user = UserBindings::new(
        sa_name.clone(),
        &req.username,
        &req.tenant,
        req.role,
        &req.role_map,
        req.admin_access,
    );

    ensure_namespace(&client).await?;
    ensure_service_account(&client, &sa_name, req).await?;
    if let Some(role) = &user.namespaced_role {
        check_cluster_role(&client, role).await?;
    }
    ensure_shared_roles(&client).await?;
    let namespaces = namespaces::open_namespaces(&client).await?;
    let mine = ListParams::default().labels(&format!("{SERVICE_ACCOUNT_LABEL}={sa_name}"));
    let existing = Api::<RoleBinding>::all(client.clone())
        .list(&mine)
        .await
        .map_err(|e| map_error(&e, "list role bindings", RBAC_NOT_SERVED))?
        .items;
    let users = [user];
    sync_role_bindings(&client, &users, &namespaces, existing, &|_| true).await?;
    let existing = Api::<ClusterRoleBinding>::all(client.clone())
        .get_opt(&binding_name(&sa_name))
        .await
        .map_err(|e| map_error(&e, "read cluster role bindings", RBAC_NOT_SERVED))?;
    sync_cluster_bindings(&client, &users, existing.into_iter().collect(), &|_| true).await?;
    disarm_legacy_tokens(&client, Some(&sa_name)).await?;
    let (token, expires_at) = request_token(&client, &sa_name, req.ttl).await?;

    let context = req
        .context_name
        .clone()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| default_context_name(&req.tenant, &endpoint.server));
    let token = Secret::new(token.into_bytes());
    let yaml = user_kubeconfig(&context, endpoint, &token)?;
    let [user] = users;
    tracing::info!(expires_at = %expires_at, "issued a user kubeconfig");
    Ok(IssuedKubeconfig {
        yaml,
        token,
        expires_at,
        service_account: sa_name,
        namespaces: if user.cluster_admin {
            Vec::new()
        } else {
            namespaces
        },
        cluster_admin: user.cluster_admin,
    })
}

/// Deletes the user's ServiceAccount (which invalidates its tokens at once), then their
/// RoleBindings in every namespace and their ClusterRoleBinding. Returns false when there
/// was none of these.
#[tracing::instrument(skip_all)]
pub async fn revoke_user_access(client: kube::Client, username: &str) -> Result<bool, AccessError> {
    let sa_name = service_account_name(username);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), USERS_NAMESPACE);
    let had_account = delete_if_present(
        &accounts,
        &sa_name,
        "delete service accounts",
        CORE_NOT_SERVED,
    )
    .await?;
    let mine = ListParams::default().labels(&format!("{SERVICE_ACCOUNT_LABEL}={sa_name}"));
    let role_bindings = Api::<RoleBinding>::all(client.clone())
        .list(&mine)
        .await
        .map_err(|e| map_error(&e, "list role bindings", RBAC_NOT_SERVED))?
        .items;
    let had_role_bindings = !role_bindings.is_empty();
    for binding in role_bindings {
        let ns = binding.metadata.namespace.unwrap_or_default();
        let api: Api<RoleBinding> = Api::namespaced(client.clone(), &ns);
        let name = binding.metadata.name.unwrap_or_default();
        delete_if_present(&api, &name, "delete role bindings", RBAC_NOT_SERVED).await?;
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(client);
    let had_binding = delete_if_present(
        &bindings,
        &binding_name(&sa_name),
        "delete cluster role bindings",
        RBAC_NOT_SERVED,
    )
    .await?;
    tracing::info!(
        had_account,
        had_role_bindings,
        had_binding,
        "revoked user access"
    );
    Ok(had_account || had_role_bindings || had_binding)
}

/// Removes what KQueen made for all its users in a cluster it is about to forget (the
/// cluster goes on existing): each of `usernames`' access ([`revoke_user_access`]), then the
/// shared ClusterRoles and their bindings.
pub async fn remove_all_access(
    client: kube::Client,
    usernames: &[String],
) -> Result<(), AccessError> {
    for username in usernames {
        revoke_user_access(client.clone(), username).await?;
    }
    remove_shared_roles(&client).await?;
    Ok(())
}

fn validate(req: &UserAccess) -> Result<(), AccessError> {
    let invalid =
        |field, message: &str| Err(AccessError::Invalid(ValidationError::new(field, message)));
    if req.username.trim().is_empty() {
        return invalid("username", "is required");
    }
    if req.tenant.trim().is_empty() {
        return invalid("tenant", "is required");
    }
    if req.ttl < MIN_TTL {
        return invalid("ttl", "must be at least 10 minutes");
    }
    if req.ttl.as_secs() >= u64::from(u32::MAX) {
        return invalid("ttl", "is too long");
    }
    for role in [&req.role_map.member, &req.role_map.admin] {
        let ok = !role.is_empty()
            && role.len() <= 253
            && role != "."
            && role != ".."
            && !role.contains(['/', '%'])
            && !role.chars().any(char::is_control);
        if !ok {
            return invalid("role_map", "names an impossible ClusterRole");
        }
    }
    Ok(())
}
