//! Per-user access to a cluster: instead of handing the admin kubeconfig to tenant members,
//! KQueen gives each member a ServiceAccount of their own (in the `kqueen-users` namespace),
//! binds it to a ClusterRole chosen by their tenant role, and hands out short-lived tokens
//! from the TokenRequest API. Revoking deletes the ServiceAccount, which invalidates every
//! token issued for it.

mod objects;
mod token;

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::Api;
use sha2::{Digest, Sha256};

use crate::identity::Role;
use crate::kubernetes::ClusterEndpoint;
use crate::vault::Secret;
use crate::ValidationError;
use objects::{
    check_cluster_role, delete_if_present, ensure_binding, ensure_namespace,
    ensure_service_account, CORE_NOT_SERVED, RBAC_NOT_SERVED,
};
use token::{default_context_name, request_token, user_kubeconfig};

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

/// Which ClusterRole each tenant role gets.
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
            context_name: None,
        }
    }
}

/// A kubeconfig issued for one user.
#[derive(Clone)]
pub struct IssuedKubeconfig {
    /// A complete kubeconfig (server, CA, token, context, current-context).
    pub yaml: Secret,
    /// When the token stops working (as the cluster granted it).
    pub expires_at: DateTime<Utc>,
    /// The ServiceAccount's name in [`USERS_NAMESPACE`].
    pub service_account: String,
}

impl fmt::Debug for IssuedKubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedKubeconfig")
            .field("yaml", &self.yaml)
            .field("expires_at", &self.expires_at)
            .field("service_account", &self.service_account)
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

/// The ClusterRoleBinding name for a ServiceAccount name.
pub fn binding_name(service_account: &str) -> String {
    format!("kqueen-user-{service_account}")
}

/// Creates (or reuses) the user's ServiceAccount and its ClusterRoleBinding, then asks the
/// cluster for a token valid for `req.ttl` and returns a kubeconfig built around it.
/// `endpoint` (server, CA, TLS and proxy settings, usually [`ParsedKubeconfig::endpoint`] of
/// the stored kubeconfig) is what the user's kubectl will use to reach the cluster. Safe to
/// call again: existing objects are reused, and a changed role replaces the binding.
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
    let cluster_role = req.role_map.cluster_role(req.role);

    ensure_namespace(&client).await?;
    ensure_service_account(&client, &sa_name, req).await?;
    check_cluster_role(&client, cluster_role).await?;
    ensure_binding(&client, &sa_name, cluster_role, req).await?;
    let (token, expires_at) = request_token(&client, &sa_name, req.ttl).await?;

    let context = req
        .context_name
        .clone()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| default_context_name(&req.tenant, &endpoint.server));
    let yaml = user_kubeconfig(&context, endpoint, token)?;
    tracing::info!(expires_at = %expires_at, "issued a user kubeconfig");
    Ok(IssuedKubeconfig {
        yaml,
        expires_at,
        service_account: sa_name,
    })
}

/// Deletes the user's ServiceAccount (which invalidates its tokens) and ClusterRoleBinding.
/// Returns false when there was neither.
#[tracing::instrument(skip_all)]
pub async fn revoke_user_access(client: kube::Client, username: &str) -> Result<bool, AccessError> {
    let sa_name = service_account_name(username);
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let had_binding = delete_if_present(
        &bindings,
        &binding_name(&sa_name),
        "delete cluster role bindings",
        RBAC_NOT_SERVED,
    )
    .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client, USERS_NAMESPACE);
    let had_account = delete_if_present(
        &accounts,
        &sa_name,
        "delete service accounts",
        CORE_NOT_SERVED,
    )
    .await?;
    tracing::info!(had_account, had_binding, "revoked user access");
    Ok(had_account || had_binding)
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
