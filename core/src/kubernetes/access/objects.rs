//! Making sure the users' namespace, a user's ServiceAccount and a ClusterRoleBinding exist
//! and are right, and telling "this cluster cannot" from "try again" when a request fails.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

use super::{AccessError, UserAccess, USERS_NAMESPACE};
use super::{MANAGED_BY, MANAGED_BY_LABEL, TENANT_ANNOTATION, USERNAME_ANNOTATION};
use crate::kubernetes::connect::{classify, Failure};

pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

pub(super) async fn ensure_namespace(client: &kube::Client) -> Result<(), AccessError> {
    let api: Api<Namespace> = Api::all(client.clone());
    match api.get_opt(USERS_NAMESPACE).await {
        Ok(Some(found)) => {
            if found.status.and_then(|s| s.phase).as_deref() == Some("Terminating") {
                return Err(AccessError::Transient(format!(
                    "the namespace {USERS_NAMESPACE} is being deleted; try again in a minute"
                )));
            }
            return Ok(());
        }
        Ok(None) => {}
        // Credentials that may not read namespaces may still create this one.
        Err(kube::Error::Api(s)) if s.is_forbidden() => {}
        Err(e) => return Err(map_error(&e, "read namespaces", CORE_NOT_SERVED)),
    }
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(USERS_NAMESPACE.into()),
            labels: Some(managed_labels()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(map_error(&e, "create namespaces", CORE_NOT_SERVED)),
    }
}

pub(super) async fn ensure_service_account(
    client: &kube::Client,
    name: &str,
    req: &UserAccess,
) -> Result<(), AccessError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), USERS_NAMESPACE);
    let what = "manage service accounts";
    let fail = |e: kube::Error| map_error(&e, what, CORE_NOT_SERVED);
    let existing = api.get_opt(name).await.map_err(fail)?;
    let Some(existing) = existing else {
        let sa = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(USERS_NAMESPACE.into()),
                labels: Some(managed_labels()),
                annotations: Some(user_annotations(req)),
                ..ObjectMeta::default()
            },
            // Tokens come from the TokenRequest API; pods never use this account.
            automount_service_account_token: Some(false),
            ..ServiceAccount::default()
        };
        return match api.create(&PostParams::default(), &sa).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
            Err(e) => Err(fail(e)),
        };
    };
    let annotations = existing.metadata.annotations.unwrap_or_default();
    if let Some(owner) = annotations.get(USERNAME_ANNOTATION) {
        if owner != &req.username {
            return Err(AccessError::Unsupported(format!(
                "the service account {USERS_NAMESPACE}/{name} belongs to another user"
            )));
        }
    }
    let labels = existing.metadata.labels.unwrap_or_default();
    let wanted = user_annotations(req);
    let up_to_date = labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY)
        && wanted.iter().all(|(k, v)| annotations.get(k) == Some(v));
    if !up_to_date {
        let patch = serde_json::json!({
            "metadata": { "labels": managed_labels(), "annotations": wanted }
        });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(fail)?;
    }
    Ok(())
}

/// Refuses a role map that names a ClusterRole the cluster does not have (a binding to it
/// would silently grant nothing). Skipped when reading ClusterRoles is not allowed.
pub(super) async fn check_cluster_role(
    client: &kube::Client,
    name: &str,
) -> Result<(), AccessError> {
    let api: Api<ClusterRole> = Api::all(client.clone());
    match api.get(name).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s))
            if s.is_not_found() && s.message.contains(&format!("\"{name}\"")) =>
        {
            Err(AccessError::Unsupported(format!(
                "the cluster has no ClusterRole named '{name}'"
            )))
        }
        Err(kube::Error::Api(s)) if s.is_forbidden() => Ok(()),
        Err(e) => Err(map_error(&e, "read cluster roles", RBAC_NOT_SERVED)),
    }
}

/// Makes the ClusterRoleBinding `wanted` exist as given: created when missing, replaced when
/// its subjects or KQueen's labels and annotations differ, deleted and created again when
/// its role changed (roleRef is immutable). True when something was written.
pub(super) async fn ensure_cluster_binding(
    client: &kube::Client,
    wanted: &ClusterRoleBinding,
) -> Result<bool, AccessError> {
    let api: Api<ClusterRoleBinding> = Api::all(client.clone());
    let name = wanted.metadata.name.clone().unwrap_or_default();
    let what = "bind cluster roles";
    let fail = |e: kube::Error| map_error(&e, what, RBAC_NOT_SERVED);
    match api.get_opt(&name).await.map_err(fail)? {
        None => {}
        Some(existing)
            if same_binding(
                &existing.metadata,
                &existing.role_ref,
                existing.subjects.as_deref(),
                wanted,
            ) =>
        {
            return Ok(false)
        }
        Some(existing) if existing.role_ref == wanted.role_ref => {
            // Same role, other subjects or metadata: replace in place.
            let mut replacement = wanted.clone();
            replacement.metadata.resource_version = existing.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &replacement)
                .await
                .map_err(fail)?;
            return Ok(true);
        }
        Some(_) => {
            // The role changed. roleRef is immutable: delete, then create below.
            delete_if_present(&api, &name, what, RBAC_NOT_SERVED).await?;
            tracing::info!(role = %wanted.role_ref.name, "replacing a cluster role binding");
        }
    }
    match api.create(&PostParams::default(), wanted).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Err(AccessError::Transient(
            "a role binding was changed at the same time; try again".into(),
        )),
        Err(e) => Err(fail(e)),
    }
}

/// A reference to the ClusterRole `cluster_role`, for ClusterRoleBindings and RoleBindings.
pub(super) fn role_ref(cluster_role: &str) -> RoleRef {
    RoleRef {
        api_group: RBAC_GROUP.into(),
        kind: "ClusterRole".into(),
        name: cluster_role.into(),
    }
}

/// The subject for a user's ServiceAccount.
pub(super) fn sa_subject(sa_name: &str) -> Subject {
    Subject {
        api_group: None,
        kind: "ServiceAccount".into(),
        name: sa_name.into(),
        namespace: Some(USERS_NAMESPACE.into()),
    }
}

/// Whether an existing binding (its metadata, role and subjects) already is `wanted`: same
/// role, same subjects, labelled as KQueen's and carrying every wanted annotation.
pub(super) fn same_binding(
    meta: &ObjectMeta,
    role: &RoleRef,
    subjects: Option<&[Subject]>,
    wanted: &ClusterRoleBinding,
) -> bool {
    same_parts(
        meta,
        role,
        subjects,
        &wanted.metadata,
        &wanted.role_ref,
        wanted.subjects.as_deref(),
    )
}

/// [`same_binding`] on parts, for RoleBindings too.
pub(super) fn same_parts(
    meta: &ObjectMeta,
    role: &RoleRef,
    subjects: Option<&[Subject]>,
    wanted_meta: &ObjectMeta,
    wanted_role: &RoleRef,
    wanted_subjects: Option<&[Subject]>,
) -> bool {
    let key = |s: &Subject| (s.kind.clone(), s.name.clone(), s.namespace.clone());
    let keys = |s: Option<&[Subject]>| s.iter().flat_map(|s| s.iter()).map(key).collect::<Vec<_>>();
    let has_all = |have: &Option<BTreeMap<String, String>>,
                   want: &Option<BTreeMap<String, String>>| {
        want.iter()
            .flatten()
            .all(|(k, v)| have.as_ref().and_then(|h| h.get(k)) == Some(v))
    };
    role == wanted_role
        && keys(subjects) == keys(wanted_subjects)
        && has_all(&meta.labels, &wanted_meta.labels)
        && has_all(&meta.annotations, &wanted_meta.annotations)
}

pub(super) fn managed_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned())])
}

fn user_annotations(req: &UserAccess) -> BTreeMap<String, String> {
    annotations_for(&req.username, &req.tenant)
}

/// The annotations naming the KQueen user and tenant an object was made for.
pub(super) fn annotations_for(username: &str, tenant: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (USERNAME_ANNOTATION.to_owned(), username.to_owned()),
        (TENANT_ANNOTATION.to_owned(), tenant.to_owned()),
    ])
}

/// Deletes `name`; false when it did not exist.
pub(super) async fn delete_if_present<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    not_served: &str,
) -> Result<bool, AccessError>
where
    K: Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
        Err(e) => Err(map_error(&e, what, not_served)),
    }
}

pub(super) const RBAC_NOT_SERVED: &str =
    "the cluster does not serve the RBAC API (rbac.authorization.k8s.io/v1)";
pub(super) const CORE_NOT_SERVED: &str = "the API server does not serve the core v1 API";
pub(super) const TOKENS_NOT_SERVED: &str =
    "the cluster does not serve the TokenRequest API (Kubernetes 1.22 or later is needed)";

/// Sorts a failed request into "cannot" and "try again", with a reason for people. `what`
/// completes "KQueen's credentials for this cluster may not …"; `not_served` explains a 404.
pub(super) fn map_error(e: &kube::Error, what: &str, not_served: &str) -> AccessError {
    match classify(e) {
        Failure::Timeout => AccessError::Transient("the API server did not answer in time".into()),
        Failure::Connect(reason) => {
            AccessError::Transient(format!("could not connect to the API server: {reason}"))
        }
        Failure::Tls(reason) => {
            AccessError::Transient(format!("TLS with the API server failed: {reason}"))
        }
        Failure::Credentials(reason) => AccessError::Unsupported(reason),
        Failure::Other(detail) => {
            AccessError::Unsupported(format!("the API server answered unexpectedly ({detail})"))
        }
        Failure::Api {
            code,
            reason,
            message,
        } => {
            let code = match reason.as_str() {
                "NotFound" => 404,
                "Forbidden" => 403,
                "Unauthorized" => 401,
                "Conflict" | "AlreadyExists" => 409,
                "Invalid" => 422,
                "TooManyRequests" => 429,
                "ServiceUnavailable" | "Timeout" | "ServerTimeout" | "InternalError" => 503,
                _ => code,
            };
            match code {
                401 => AccessError::Unsupported(
                    "the cluster no longer accepts KQueen's credentials (HTTP 401); update the \
                     cluster's kubeconfig"
                        .into(),
                ),
                403 if message.contains("being terminated") => AccessError::Transient(format!(
                    "the namespace {USERS_NAMESPACE} is being deleted; try again in a minute"
                )),
                403 => AccessError::Unsupported(format!(
                    "KQueen's credentials for this cluster may not {what} (HTTP 403){}",
                    colon(&message)
                )),
                // An object vanished meanwhile (`serviceaccounts "x" not found`)…
                404 if message.contains('"') && message.ends_with("not found") => {
                    AccessError::Transient(format!("{message}; try again"))
                }
                // …or the API (or subresource) is not served at all.
                404 => AccessError::Unsupported(not_served.into()),
                409 | 429 => AccessError::Transient(format!(
                    "the API server is busy or the object changed meanwhile (HTTP {code}); try \
                     again"
                )),
                c if c >= 500 => AccessError::Transient(format!(
                    "the API server failed (HTTP {c}){}",
                    colon(&message)
                )),
                c => AccessError::Unsupported(format!(
                    "the cluster refused to {what} (HTTP {c}){}",
                    colon(&message)
                )),
            }
        }
    }
}

/// `": message"`, or nothing when the server said nothing.
fn colon(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}
