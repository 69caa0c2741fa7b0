//! Which namespaces a tenant's users get their role in. Everything else in a cluster (the
//! system namespaces, where ServiceAccounts with broad rights and their credentials live,
//! and KQueen's own) stays out of reach of a personal kubeconfig.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

use super::objects::{map_error, CORE_NOT_SERVED};
use super::{AccessError, MANAGED_BY, MANAGED_BY_LABEL, USERS_NAMESPACE};

/// Kubernetes reserves namespaces starting with `kube-` for the system (`kube-system`,
/// `kube-public`, `kube-node-lease`, and those of system add-ons).
pub const SYSTEM_PREFIX: &str = "kube-";
/// A label operators put on a namespace to keep tenant users out of it (e.g. an ingress
/// controller's or a monitoring stack's namespace on an imported cluster).
pub const TENANT_ACCESS_LABEL: &str = "kqueen.io/tenant-access";
/// The value of [`TENANT_ACCESS_LABEL`] that keeps users out.
pub const TENANT_ACCESS_NONE: &str = "none";

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

/// The names of the namespaces open to tenant users, sorted.
pub(super) async fn open_namespaces(client: &kube::Client) -> Result<Vec<String>, AccessError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| map_error(&e, "list namespaces", CORE_NOT_SERVED))?;
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter(|n| open_to_tenant(n))
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
