//! What KQueen wrote into clusters before access became per namespace, for the tests of its
//! migration: a user's ServiceAccount bound to `edit` cluster-wide.

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kqueen_core::kubernetes::{binding_name, MANAGED_BY, MANAGED_BY_LABEL, USERS_NAMESPACE};
use kube::api::{Api, PostParams};

/// Creates the old ClusterRoleBinding of `edit` for `service_account` (in `kqueen-users`).
pub async fn cluster_binding(admin: &kube::Client, service_account: &str) {
    let crbs: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let old = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(binding_name(service_account)),
            labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned())].into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "edit".into(),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".into(),
            name: service_account.into(),
            namespace: Some(USERS_NAMESPACE.into()),
        }]),
    };
    crbs.create(&PostParams::default(), &old)
        .await
        .expect("create the old ClusterRoleBinding");
}
