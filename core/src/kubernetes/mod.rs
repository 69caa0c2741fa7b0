//! Talking to clusters' Kubernetes API: kubeconfig parsing and checks ([`parse_kubeconfig`]),
//! clients and the version probe ([`client`], [`probe_version`]), and per-user access for
//! tenant members ([`issue_user_kubeconfig`], [`revoke_user_access`]).

mod access;
mod connect;
mod kubeconfig;

pub use access::{
    binding_name, issue_user_kubeconfig, revoke_user_access, service_account_name, AccessError,
    IssuedKubeconfig, RoleMap, UserAccess, MANAGED_BY, MANAGED_BY_LABEL, MIN_TTL,
    TENANT_ANNOTATION, USERNAME_ANNOTATION, USERS_NAMESPACE,
};
pub use connect::{client, probe_version, ProbeError};
pub use kubeconfig::{
    current_server, parse_kubeconfig, AuthKind, ClusterEndpoint, ParsedKubeconfig,
    MAX_KUBECONFIG_BYTES,
};
