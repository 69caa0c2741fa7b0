//! What every application use case checks first: who may deploy where and with whose
//! rights, the request itself (names, namespace, manifests), and the namespace in the
//! cluster.

use uuid::Uuid;

use super::{Acting, Apps, DeployRequest};
use crate::audit::action;
use crate::cluster::{AdminAccess, Cluster, ClusterState};
use crate::identity::Role;
use crate::policy::Permission;
use crate::workloads::application::{
    check_app_name, check_version, version_namespace, AppState, Application,
};
use crate::workloads::manifest::{parse_manifests, ManifestLimits, ManifestObject};
use crate::workloads::resolve::Placement;
use crate::{Actor, Error, Result, ValidationError};

impl Apps {
    pub(super) async fn visible_app(
        &self,
        actor: &Actor,
        cluster_id: &str,
        app_id: &str,
    ) -> Result<(Cluster, Application)> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::APP_VIEW)
            .await?;
        let app = match Uuid::parse_str(app_id.trim()) {
            Ok(id) => match self.deps.store.application(id).await {
                Ok(a) if a.cluster_id == cluster.id => Some(a),
                Ok(_) | Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        match app {
            Some(a) => Ok((cluster, a)),
            None => Err(Error::NotFound("application")),
        }
    }

    /// The cluster, if the actor may deploy there, and whose rights the deploy uses.
    pub(super) async fn authorized(
        &self,
        actor: &Actor,
        cluster_id: &str,
        verb: &str,
    ) -> Result<(Cluster, Acting)> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, verb)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        let acting = match actor.identity() {
            Some(who) if who.role_in(cluster.tenant_id).is_some() => Acting::Member(who.user_id),
            _ => Acting::Kqueen,
        };
        Ok((cluster, acting))
    }

    /// Checks a request without the cluster: names, the namespace, the manifests.
    pub(super) async fn check(
        &self,
        cluster: &Cluster,
        acting: Acting,
        req: &DeployRequest,
    ) -> Result<Checked> {
        if cluster.state != ClusterState::Ready {
            return Err(Error::Conflict(format!(
                "the cluster is {}; applications are deployed when it is Ready",
                cluster.state.label()
            )));
        }
        let name = check_app_name(req.name.trim())?;
        let version = check_version(req.version.trim())?;
        let namespace = version_namespace(&name, &version, req.namespace.as_deref())?;
        let objects = parse_manifests(&req.manifests, &ManifestLimits::default())?;
        if objects.is_empty() {
            return Err(ValidationError::new("manifests", "hold no object").into());
        }
        let cluster_scoped = self.may_apply_cluster_scoped(cluster, acting).await?;
        Ok(Checked {
            placement: Placement {
                namespace: namespace.clone(),
                other_namespaces: false,
                cluster_scoped,
                cluster_name: cluster.name.as_str().to_owned(),
            },
            name,
            version,
            namespace,
            objects,
        })
    }

    /// Whether the namespace exists; refused when it does but is not open to the tenant
    /// (system namespaces, KQueen's, an operator's closed ones).
    pub(super) async fn namespace_state(
        &self,
        admin: &kube::Client,
        cluster: &Cluster,
        namespace: &str,
    ) -> Result<bool> {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(admin.clone());
        let found = api.get_opt(namespace).await.map_err(|e| {
            super::workload_error(crate::workloads::api_error(e, "read namespaces"))
        })?;
        match found {
            None => Ok(false),
            Some(ns) if crate::kubernetes::open_to_tenant(&ns) => Ok(true),
            Some(_) => Err(ValidationError::new(
                "namespace",
                format!(
                    "{namespace} exists in cluster {} and is closed to tenants",
                    cluster.name.as_str()
                ),
            )
            .into()),
        }
    }

    pub(crate) async fn client_for(
        &self,
        cluster: &Cluster,
        acting: Acting,
    ) -> Result<(kube::Client, String)> {
        match acting {
            Acting::Member(user) => self.access.member_client(cluster, user).await,
            Acting::Kqueen => {
                let (client, _) = self.admin.admin_client(cluster).await?;
                Ok((client, "KQueen's admin credential (operator)".into()))
            }
        }
    }

    pub(super) fn draft(
        &self,
        cluster: &Cluster,
        acting: Acting,
        c: &Checked,
        who: &str,
    ) -> Application {
        let now = crate::clock::now();
        Application {
            id: Uuid::now_v7(),
            tenant_id: cluster.tenant_id,
            cluster_id: cluster.id,
            name: c.name.clone(),
            version: c.version.clone(),
            namespace: c.namespace.clone(),
            state: AppState::Deploying,
            error: None,
            objects: Vec::new(),
            user_id: match acting {
                Acting::Member(u) => Some(u),
                Acting::Kqueen => None,
            },
            requested_by: who.to_owned(),
            created_at: now,
            updated_at: now,
            deployed_at: None,
        }
    }
}

/// A request that passed the checks that need no cluster.
pub(super) struct Checked {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) namespace: String,
    pub(super) placement: Placement,
    pub(super) objects: Vec<ManifestObject>,
}

impl Apps {
    /// Whether `acting` may apply cluster-scoped objects: KQueen's credential (operators),
    /// and tenant admins of clusters whose template gives them cluster-admin.
    pub(super) async fn may_apply_cluster_scoped(
        &self,
        cluster: &Cluster,
        acting: Acting,
    ) -> Result<bool> {
        match acting {
            Acting::Kqueen => Ok(true),
            Acting::Member(user) => {
                let role = self
                    .deps
                    .store
                    .memberships_of(user)
                    .await?
                    .into_iter()
                    .find(|m| m.tenant_id == cluster.tenant_id)
                    .map(|m| m.role);
                Ok(role == Some(Role::Admin)
                    && self.admin.admin_access_of(cluster).await? == AdminAccess::ClusterAdmin)
            }
        }
    }
}
