//! The two small ClusterRoles every KQueen user of a cluster gets, bound once to the group
//! of all ServiceAccounts in `kqueen-users` (only KQueen creates ServiceAccounts there):
//! read-only access to the cluster-scoped objects a developer needs, and the right to create
//! namespaces, in which KQueen then binds the tenant's users at its next access sweep.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::objects::{ensure_cluster_binding, managed_labels, map_error, role_ref};
use super::objects::{RBAC_GROUP, RBAC_NOT_SERVED};
use super::{AccessError, USERS_NAMESPACE};

/// Read-only access to nodes, namespaces, storage and ingress classes, priority classes,
/// CRDs and node metrics.
pub const READER_ROLE: &str = "kqueen:cluster-reader";
/// `create` on namespaces, nothing else (not even reading or deleting them).
pub const NAMESPACE_CREATOR_ROLE: &str = "kqueen:namespace-creator";

const READ: &[&str] = &["get", "list", "watch"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(owned(groups)),
        resources: Some(owned(resources)),
        verbs: owned(verbs),
        ..PolicyRule::default()
    }
}

/// The rules of the two roles, by name.
pub(super) fn roles() -> [(&'static str, Vec<PolicyRule>); 2] {
    [
        (
            READER_ROLE,
            vec![
                rule(&[""], &["nodes", "namespaces"], READ),
                rule(&["storage.k8s.io"], &["storageclasses", "csidrivers"], READ),
                rule(&["networking.k8s.io"], &["ingressclasses"], READ),
                rule(&["scheduling.k8s.io"], &["priorityclasses"], READ),
                rule(
                    &["apiextensions.k8s.io"],
                    &["customresourcedefinitions"],
                    READ,
                ),
                rule(&["metrics.k8s.io"], &["nodes"], &["get", "list"]),
            ],
        ),
        (
            NAMESPACE_CREATOR_ROLE,
            vec![rule(&[""], &["namespaces"], &["create"])],
        ),
    ]
}

/// The group every ServiceAccount in `kqueen-users` belongs to.
pub(super) fn users_group() -> String {
    format!("system:serviceaccounts:{USERS_NAMESPACE}")
}

/// Makes both ClusterRoles and their bindings to the users' group exist as KQueen wants
/// them. True when something was written.
pub(super) async fn ensure_shared_roles(client: &kube::Client) -> Result<bool, AccessError> {
    let mut changed = false;
    for (name, rules) in roles() {
        changed |= ensure_cluster_role(client, name, rules).await?;
        let binding = ClusterRoleBinding {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(managed_labels()),
                ..ObjectMeta::default()
            },
            role_ref: role_ref(name),
            subjects: Some(vec![Subject {
                api_group: Some(RBAC_GROUP.into()),
                kind: "Group".into(),
                name: users_group(),
                namespace: None,
            }]),
        };
        changed |= ensure_cluster_binding(client, &binding).await?;
    }
    Ok(changed)
}

async fn ensure_cluster_role(
    client: &kube::Client,
    name: &str,
    rules: Vec<PolicyRule>,
) -> Result<bool, AccessError> {
    let api: Api<ClusterRole> = Api::all(client.clone());
    let fail = |e: kube::Error| map_error(&e, "manage cluster roles", RBAC_NOT_SERVED);
    let mut wanted = ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(managed_labels()),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        aggregation_rule: None,
    };
    match api.get_opt(name).await.map_err(fail)? {
        None => match api.create(&PostParams::default(), &wanted).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(false),
            Err(e) => Err(fail(e)),
        },
        Some(existing) => {
            let labelled = existing
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| managed_labels().iter().all(|(k, v)| l.get(k) == Some(v)));
            let same_rules = existing.rules.as_deref().unwrap_or_default()
                == wanted.rules.as_deref().unwrap_or_default();
            if labelled && same_rules && existing.aggregation_rule.is_none() {
                return Ok(false);
            }
            wanted.metadata.resource_version = existing.metadata.resource_version;
            api.replace(name, &PostParams::default(), &wanted)
                .await
                .map_err(fail)?;
            Ok(true)
        }
    }
}

/// Deletes both ClusterRoles and their bindings (when KQueen forgets a cluster that goes on
/// existing). True when there was any.
pub(super) async fn remove_shared_roles(client: &kube::Client) -> Result<bool, AccessError> {
    use super::objects::delete_if_present;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    let mut any = false;
    for (name, _) in roles() {
        any |= delete_if_present(
            &bindings,
            name,
            "delete cluster role bindings",
            RBAC_NOT_SERVED,
        )
        .await?;
        any |= delete_if_present(
            &cluster_roles,
            name,
            "delete cluster roles",
            RBAC_NOT_SERVED,
        )
        .await?;
    }
    Ok(any)
}
