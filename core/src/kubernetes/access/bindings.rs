//! The users' own bindings: a RoleBinding of their role in every namespace open to the
//! tenant, and, only for tenant admins of a template that says so, a ClusterRoleBinding of
//! `cluster-admin`. Computed as a difference between what should exist and what does, so
//! that issuing one kubeconfig and sweeping a whole cluster share one code path.

use std::collections::{BTreeMap, BTreeSet};

use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::objects::{annotations_for, delete_if_present, ensure_cluster_binding, managed_labels};
use super::objects::{map_error, role_ref, sa_subject, same_parts, RBAC_NOT_SERVED};
use super::{binding_name, AccessError, RoleMap};
use crate::cluster::AdminAccess;
use crate::identity::Role;

/// Label on every per-user binding: the ServiceAccount it binds.
pub const SERVICE_ACCOUNT_LABEL: &str = "kqueen.io/service-account";
/// The ClusterRole tenant admins get when their template grants cluster-wide rights.
pub const CLUSTER_ADMIN_ROLE: &str = "cluster-admin";
/// How many binding writes run at once against one cluster.
const PARALLEL_WRITES: usize = 8;

/// What one user should have in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UserBindings {
    pub sa: String,
    pub username: String,
    pub tenant: String,
    /// The ClusterRole bound in every open namespace; None when the user has cluster-admin.
    pub namespaced_role: Option<String>,
    pub cluster_admin: bool,
}

impl UserBindings {
    pub fn new(
        sa: String,
        username: &str,
        tenant: &str,
        role: Role,
        map: &RoleMap,
        admin: AdminAccess,
    ) -> Self {
        let cluster_admin = role == Role::Admin && admin == AdminAccess::ClusterAdmin;
        Self {
            sa,
            username: username.to_owned(),
            tenant: tenant.to_owned(),
            namespaced_role: (!cluster_admin).then(|| map.cluster_role(role).to_owned()),
            cluster_admin,
        }
    }

    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = managed_labels();
        labels.insert(SERVICE_ACCOUNT_LABEL.to_owned(), self.sa.clone());
        labels
    }

    fn metadata(&self, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(binding_name(&self.sa)),
            namespace: namespace.map(str::to_owned),
            labels: Some(self.labels()),
            annotations: Some(annotations_for(&self.username, &self.tenant)),
            ..ObjectMeta::default()
        }
    }

    fn role_binding(&self, namespace: &str, role: &str) -> RoleBinding {
        RoleBinding {
            metadata: self.metadata(Some(namespace)),
            role_ref: role_ref(role),
            subjects: Some(vec![sa_subject(&self.sa)]),
        }
    }

    fn cluster_binding(&self) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: self.metadata(None),
            role_ref: role_ref(CLUSTER_ADMIN_ROLE),
            subjects: Some(vec![sa_subject(&self.sa)]),
        }
    }
}

/// What a pass over the bindings changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BindingChanges {
    /// Namespaces where a user was given their role.
    pub bound_in: BTreeSet<String>,
    pub role_bindings_created: usize,
    pub role_bindings_removed: usize,
    /// Users (ServiceAccount names) whose ClusterRoleBinding was removed: the old
    /// cluster-wide `edit`/`admin`, or a `cluster-admin` the template no longer grants.
    pub cluster_bindings_removed: BTreeSet<String>,
    pub cluster_bindings_written: usize,
}

/// The ServiceAccount a binding binds: from KQueen's label, or (bindings made before the
/// label existed) from its single ServiceAccount subject.
fn bound_sa(
    meta: &ObjectMeta,
    subjects: Option<&[k8s_openapi::api::rbac::v1::Subject]>,
) -> Option<String> {
    if let Some(sa) = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(SERVICE_ACCOUNT_LABEL))
    {
        return Some(sa.clone());
    }
    match subjects {
        Some([s]) if s.kind == "ServiceAccount" => Some(s.name.clone()),
        _ => None,
    }
}

/// Whether `name` is a per-user binding's name (`kqueen-user-…`).
fn is_user_binding(meta: &ObjectMeta) -> bool {
    meta.name
        .as_deref()
        .is_some_and(|n| n.starts_with(&binding_name("")))
}

/// One binding's write: delete (namespace, name), create, or delete then create (a role
/// change: roleRef is immutable).
struct Write {
    delete: Option<(String, String)>,
    create: Option<Box<RoleBinding>>,
}

impl Write {
    fn delete(binding: RoleBinding) -> Self {
        let meta = binding.metadata;
        Write {
            delete: Some((
                meta.namespace.unwrap_or_default(),
                meta.name.unwrap_or_default(),
            )),
            create: None,
        }
    }
}

/// Brings the RoleBindings of `users` to their role in each of `namespaces`, given the
/// per-user RoleBindings that exist (`existing`, any namespace). Bindings of users not in
/// `users` are left alone unless their ServiceAccount is gone (`sa_exists` false).
pub(super) async fn sync_role_bindings(
    client: &kube::Client,
    users: &[UserBindings],
    namespaces: &[String],
    existing: Vec<RoleBinding>,
    sa_exists: &(dyn Fn(&str) -> bool + Sync),
) -> Result<BindingChanges, AccessError> {
    let by_sa: BTreeMap<&str, &UserBindings> = users.iter().map(|u| (u.sa.as_str(), u)).collect();
    let mut have: BTreeMap<(String, String), RoleBinding> = BTreeMap::new();
    let mut writes = Vec::new();
    for binding in existing
        .into_iter()
        .filter(|b| is_user_binding(&b.metadata))
    {
        let ns = binding.metadata.namespace.clone().unwrap_or_default();
        let Some(sa) = bound_sa(&binding.metadata, binding.subjects.as_deref()) else {
            continue;
        };
        have.insert((ns, sa), binding);
    }
    let mut changes = BindingChanges::default();
    for user in users {
        let Some(role) = &user.namespaced_role else {
            continue;
        };
        for ns in namespaces {
            let wanted = user.role_binding(ns, role);
            match have.remove(&(ns.clone(), user.sa.clone())) {
                Some(b)
                    if same_parts(
                        &b.metadata,
                        &b.role_ref,
                        b.subjects.as_deref(),
                        &wanted.metadata,
                        &wanted.role_ref,
                        wanted.subjects.as_deref(),
                    ) => {}
                existing => {
                    writes.push(Write {
                        delete: existing
                            .map(|b| Write::delete(b).delete)
                            .unwrap_or_default(),
                        create: Some(Box::new(wanted)),
                    });
                    changes.bound_in.insert(ns.clone());
                }
            }
        }
    }
    // What is left is not wanted: a closed namespace, a user who now has cluster-admin, or
    // a ServiceAccount that is gone.
    for ((_, sa), binding) in have {
        if by_sa.contains_key(sa.as_str()) || !sa_exists(&sa) {
            writes.push(Write::delete(binding));
        }
    }
    let results: Vec<(usize, usize)> = stream::iter(writes.into_iter().map(|write| {
        let client = client.clone();
        async move {
            let (mut created, mut removed) = (0, 0);
            if let Some((namespace, name)) = write.delete {
                let api: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace);
                if delete_if_present(&api, &name, "delete role bindings", RBAC_NOT_SERVED).await? {
                    removed += 1;
                }
            }
            if let Some(binding) = write.create {
                create_role_binding(&client, &binding).await?;
                created += 1;
            }
            Ok::<_, AccessError>((created, removed))
        }
    }))
    .buffer_unordered(PARALLEL_WRITES)
    .try_collect()
    .await?;
    for (created, removed) in results {
        changes.role_bindings_created += created;
        changes.role_bindings_removed += removed;
    }
    Ok(changes)
}

async fn create_role_binding(
    client: &kube::Client,
    binding: &RoleBinding,
) -> Result<(), AccessError> {
    let ns = binding.metadata.namespace.clone().unwrap_or_default();
    let api: Api<RoleBinding> = Api::namespaced(client.clone(), &ns);
    match api.create(&PostParams::default(), binding).await {
        Ok(_) => Ok(()),
        // Made meanwhile by a concurrent pass: the next pass checks its content.
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        // The namespace went away meanwhile: nothing to bind there any more.
        Err(kube::Error::Api(s)) if s.is_not_found() && s.message.contains("namespace") => Ok(()),
        Err(e) => Err(map_error(&e, "create role bindings", RBAC_NOT_SERVED)),
    }
}

/// Brings the per-user ClusterRoleBindings in line: `cluster-admin` for the users of `users`
/// who should have it, none for the others. Of users not in `users`, every binding other than
/// `cluster-admin` goes (KQueen no longer binds `edit` or `admin` cluster-wide: those are the
/// old bindings being migrated), and a `cluster-admin` goes when its ServiceAccount is gone.
pub(super) async fn sync_cluster_bindings(
    client: &kube::Client,
    users: &[UserBindings],
    existing: Vec<ClusterRoleBinding>,
    sa_exists: &(dyn Fn(&str) -> bool + Sync),
) -> Result<BindingChanges, AccessError> {
    let by_sa: BTreeMap<&str, &UserBindings> = users.iter().map(|u| (u.sa.as_str(), u)).collect();
    let api: Api<ClusterRoleBinding> = Api::all(client.clone());
    let mut changes = BindingChanges::default();
    let mut seen = BTreeSet::new();
    for binding in existing
        .into_iter()
        .filter(|b| is_user_binding(&b.metadata))
    {
        let Some(sa) = bound_sa(&binding.metadata, binding.subjects.as_deref()) else {
            continue;
        };
        let keep = match by_sa.get(sa.as_str()) {
            Some(user) => user.cluster_admin,
            None => binding.role_ref.name == CLUSTER_ADMIN_ROLE && sa_exists(&sa),
        };
        if keep {
            seen.insert(sa);
            continue;
        }
        let name = binding.metadata.name.clone().unwrap_or_default();
        if delete_if_present(&api, &name, "delete cluster role bindings", RBAC_NOT_SERVED).await? {
            tracing::info!(binding = %name, role = %binding.role_ref.name, "removed a user's cluster role binding");
            changes.cluster_bindings_removed.insert(sa);
        }
    }
    for user in users.iter().filter(|u| u.cluster_admin) {
        // Also for `seen` ones: their subjects or labels may be wrong, or roleRef old.
        if ensure_cluster_binding(client, &user.cluster_binding()).await? {
            changes.cluster_bindings_written += 1;
        }
    }
    Ok(changes)
}

impl BindingChanges {
    pub(super) fn merge(&mut self, other: BindingChanges) {
        self.bound_in.extend(other.bound_in);
        self.role_bindings_created += other.role_bindings_created;
        self.role_bindings_removed += other.role_bindings_removed;
        self.cluster_bindings_removed
            .extend(other.cluster_bindings_removed);
        self.cluster_bindings_written += other.cluster_bindings_written;
    }
}
