//! Which namespaces a tenant's users get their role in. Everything else in a cluster (the
//! system namespaces, where ServiceAccounts with broad rights and their credentials live,
//! infrastructure namespaces whose ServiceAccounts hold cluster-wide rights, and KQueen's
//! own) stays out of reach of a personal kubeconfig: `edit` in a namespace lets a user run a
//! pod as any ServiceAccount there, and so hold that account's rights.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ListParams};

use super::objects::{map_error, CORE_NOT_SERVED, RBAC_NOT_SERVED};
use super::{AccessError, MANAGED_BY, MANAGED_BY_LABEL, USERS_NAMESPACE};

/// Kubernetes reserves namespaces starting with `kube-` for the system (`kube-system`,
/// `kube-public`, `kube-node-lease`, and those of system add-ons).
pub const SYSTEM_PREFIX: &str = "kube-";
/// A label operators put on a namespace to keep tenant users out of it (e.g. an ingress
/// controller's or a monitoring stack's namespace on an imported cluster).
pub const TENANT_ACCESS_LABEL: &str = "kqueen.io/tenant-access";
/// The value of [`TENANT_ACCESS_LABEL`] that keeps users out.
pub const TENANT_ACCESS_NONE: &str = "none";
/// The value of [`TENANT_ACCESS_LABEL`] that opens a namespace closed only because its
/// ServiceAccounts are bound cluster-wide (the operator accepts what that gives members).
pub const TENANT_ACCESS_OPEN: &str = "open";

/// Whether tenant users get their role in `namespace`: not a `kube-` namespace, not
/// `kqueen-users`, not owned by KQueen or an addon (labelled `app.kubernetes.io/managed-by:
/// kqueen`), not opted out by an operator (`kqueen.io/tenant-access: none`), and not being
/// deleted.
pub fn open_to_tenant(namespace: &Namespace) -> bool {
    let name = namespace.metadata.name.as_deref().unwrap_or_default();
    let label = |key: &str| {
        namespace
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    };
    let terminating = namespace.status.as_ref().and_then(|s| s.phase.as_deref())
        == Some("Terminating")
        || namespace.metadata.deletion_timestamp.is_some();
    !name.is_empty()
        && !name.starts_with(SYSTEM_PREFIX)
        && name != USERS_NAMESPACE
        && label(MANAGED_BY_LABEL) != Some(MANAGED_BY)
        && label(TENANT_ACCESS_LABEL) != Some(TENANT_ACCESS_NONE)
        && !terminating
}

/// The namespaces whose own ServiceAccounts are bound cluster-wide: a ServiceAccount
/// subject, or the group of one namespace's ServiceAccounts, of any ClusterRoleBinding.
/// (Groups of every ServiceAccount or every user are left out: those rights reach the users
/// directly anyway.)
pub fn namespaces_bound_cluster_wide(bindings: &[ClusterRoleBinding]) -> BTreeSet<String> {
    const GROUP_PREFIX: &str = "system:serviceaccounts:";
    bindings
        .iter()
        .flat_map(|b| b.subjects.iter().flatten())
        .filter_map(|s| match s.kind.as_str() {
            "ServiceAccount" => s.namespace.clone(),
            "Group" => s.name.strip_prefix(GROUP_PREFIX).map(str::to_owned),
            _ => None,
        })
        .filter(|ns| !ns.is_empty())
        .collect()
}

/// Whether tenant users get their role in `namespace` in a cluster where the namespaces
/// `bound_cluster_wide` hold ServiceAccounts with cluster-wide rights: [`open_to_tenant`],
/// and not one of those unless an operator opened it (`kqueen.io/tenant-access: open`).
pub fn open_in_cluster(namespace: &Namespace, bound_cluster_wide: &BTreeSet<String>) -> bool {
    let name = namespace.metadata.name.as_deref().unwrap_or_default();
    let opened = namespace
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(TENANT_ACCESS_LABEL))
        .map(String::as_str)
        == Some(TENANT_ACCESS_OPEN);
    open_to_tenant(namespace) && (opened || !bound_cluster_wide.contains(name))
}

/// The names of the namespaces open to tenant users, sorted.
pub(super) async fn open_namespaces(client: &kube::Client) -> Result<Vec<String>, AccessError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| map_error(&e, "list namespaces", CORE_NOT_SERVED))?;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let bindings = bindings
        .list(&ListParams::default())
        .await
        .map_err(|e| map_error(&e, "list cluster role bindings", RBAC_NOT_SERVED))?;
    let bound = namespaces_bound_cluster_wide(&bindings.items);
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter(|n| open_in_cluster(n, &bound))
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::NamespaceStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn ns(name: &str, labels: &[(&str, &str)]) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect::<BTreeMap<_, _>>(),
                ),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        }
    }

    #[test]
    fn system_and_kqueen_namespaces_are_closed() {
        for closed in [
            "kube-system",
            "kube-public",
            "kube-node-lease",
            "kube-flannel",
            USERS_NAMESPACE,
        ] {
            assert!(!open_to_tenant(&ns(closed, &[])), "{closed}");
        }
        assert!(!open_to_tenant(&ns(
            "addon-monitoring",
            &[(MANAGED_BY_LABEL, MANAGED_BY)]
        )));
        assert!(!open_to_tenant(&ns(
            "ingress-nginx",
            &[(TENANT_ACCESS_LABEL, TENANT_ACCESS_NONE)]
        )));
        let mut leaving = ns("old", &[]);
        leaving.status = Some(NamespaceStatus {
            phase: Some("Terminating".into()),
            ..NamespaceStatus::default()
        });
        assert!(!open_to_tenant(&leaving));
    }

    #[test]
    fn namespaces_whose_accounts_are_bound_cluster_wide_are_closed() {
        use k8s_openapi::api::rbac::v1::{RoleRef, Subject};
        let binding = |kind: &str, name: &str, namespace: Option<&str>| ClusterRoleBinding {
            metadata: ObjectMeta::default(),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: "view".into(),
            },
            subjects: Some(vec![Subject {
                api_group: None,
                kind: kind.into(),
                name: name.into(),
                namespace: namespace.map(str::to_owned),
            }]),
        };
        let bound = namespaces_bound_cluster_wide(&[
            binding("ServiceAccount", "controller", Some("ingress-nginx")),
            binding("Group", "system:serviceaccounts:monitoring", None),
            binding("Group", "system:serviceaccounts", None),
            binding("Group", "system:authenticated", None),
            binding("User", "jane", None),
        ]);
        assert_eq!(
            bound.iter().map(String::as_str).collect::<Vec<_>>(),
            ["ingress-nginx", "monitoring"]
        );
        assert!(!open_in_cluster(&ns("ingress-nginx", &[]), &bound));
        assert!(!open_in_cluster(&ns("monitoring", &[]), &bound));
        assert!(open_in_cluster(&ns("team-a", &[]), &bound));
        let opened = ns("monitoring", &[(TENANT_ACCESS_LABEL, TENANT_ACCESS_OPEN)]);
        assert!(open_in_cluster(&opened, &bound), "an operator may open it");
        assert!(
            !open_in_cluster(
                &ns("kube-system", &[(TENANT_ACCESS_LABEL, TENANT_ACCESS_OPEN)]),
                &bound
            ),
            "never the system ones"
        );
    }

    #[test]
    fn ordinary_namespaces_are_open() {
        for open in ["default", "team-a", "kubex", "my-kube-app"] {
            assert!(open_to_tenant(&ns(open, &[])), "{open}");
        }
        assert!(open_to_tenant(&ns(
            "helm-app",
            &[(MANAGED_BY_LABEL, "Helm")]
        )));
        assert!(open_to_tenant(&ns("x", &[(TENANT_ACCESS_LABEL, "yes")])));
    }
}
