//! Talking to clusters' Kubernetes API: kubeconfig parsing and checks ([`parse_kubeconfig`]),
//! clients and the version probe ([`client`], [`probe_version`]), and per-user access for
//! tenant members ([`issue_user_kubeconfig`], [`revoke_user_access`]).

mod access;
mod connect;
mod drain;
mod kubeconfig;
mod names;
mod nodes;
mod time;

pub use access::{
    binding_name, issue_user_kubeconfig, namespaces_bound_cluster_wide, open_in_cluster,
    open_to_tenant, reconcile_access, remove_all_access, revoke_user_access, service_account_name,
    AccessChanges, AccessError, BindingChanges, Grant, IssuedKubeconfig, RoleMap, UserAccess,
    CLUSTER_ADMIN_ROLE, DISARMED_TOKEN, MANAGED_BY, MANAGED_BY_LABEL, MIN_TTL,
    NAMESPACE_CREATOR_ROLE, READER_ROLE, SERVICE_ACCOUNT_LABEL, SYSTEM_PREFIX, TENANT_ACCESS_LABEL,
    TENANT_ACCESS_NONE, TENANT_ACCESS_OPEN, TENANT_ANNOTATION, USERNAME_ANNOTATION,
    USERS_NAMESPACE,
};
pub(crate) use connect::one_line;
pub use connect::{client, probe_version, ProbeError};
pub use drain::{cordon, drain_pass, remove_node, DrainPass};
pub use kubeconfig::{
    current_server, parse_kubeconfig, read_kubeconfig, AuthKind, ClusterEndpoint, ParsedKubeconfig,
    StaticCredential, MAX_KUBECONFIG_BYTES,
};
pub use names::{is_dns_label, is_dns_subdomain};
pub use nodes::{dead_node, is_node_name, remove_dead_node, DeadNode, NodeCheck, Removal};
pub use time::utc;
