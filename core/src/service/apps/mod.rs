//! Applications: tenant members deploy versions of their applications into their clusters,
//! each version in its own namespace, applied with the member's own rights in the cluster
//! (their ServiceAccount's token, see [`crate::kubernetes`]), never with KQueen's admin
//! credential. A dry run first shows what would change; the deploy itself, and a version's
//! removal, are durable operations ([`run`]) with an audit entry.

mod checks;
mod run;

use uuid::Uuid;

use super::access::Access;
use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationKind, OperationTarget};
use crate::deps::Deps;
use crate::policy::Permission;
use crate::vault::{names, Secret};
use crate::workloads::application::Application;
use crate::workloads::apply::{dry_run, ObjectDiff};
use crate::workloads::resolve::resolve;
use crate::workloads::status::{set_status, SetStatus};
use crate::workloads::WorkloadError;
use crate::{Actor, Error, Result};

pub(crate) use run::op_error;
pub use run::workload_error;

/// How long a deploy or a delete may take.
const OPERATION_MINUTES: i64 = 15;

/// A deploy as a member asks for it.
#[derive(Clone)]
pub struct DeployRequest {
    pub name: String,
    pub version: String,
    /// None or empty: `<name>-<version>`.
    pub namespace: Option<String>,
    /// Multi-document YAML. May hold Secrets: never logged, sealed at rest.
    pub manifests: String,
}

impl std::fmt::Debug for DeployRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeployRequest")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("namespace", &self.namespace)
            .field(
                "manifests",
                &format_args!("<{} bytes>", self.manifests.len()),
            )
            .finish()
    }
}

/// What a deploy would do: every object created, changed (which fields) or unchanged, and
/// the objects a re-deploy prunes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployPreview {
    pub name: String,
    pub version: String,
    pub namespace: String,
    /// False: the namespace is made by the deploy, and the server checks the objects then.
    pub namespace_exists: bool,
    /// Whose rights the deploy uses.
    pub applied_as: String,
    pub objects: Vec<ObjectDiff>,
}

/// A version with how its workloads are doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppStatus {
    pub application: Application,
    /// None when the cluster could not be asked (the reason is in `unreachable`).
    pub status: Option<SetStatus>,
    pub unreachable: Option<String>,
}

/// Whose rights an application is applied with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acting {
    /// A member of the cluster's tenant: their ServiceAccount.
    Member(Uuid),
    /// KQueen's admin credential: operators (who hold the admin kubeconfig anyway).
    Kqueen,
}

#[derive(Clone)]
pub struct Apps {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    access: Access,
    admin: ClusterAdmin,
}

impl Apps {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        clusters: &Clusters,
        access: &Access,
        admin: &ClusterAdmin,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            access: access.clone(),
            admin: admin.clone(),
        }
    }

    /// The versions deployed in a cluster.
    pub async fn list(&self, actor: &Actor, cluster_id: &str) -> Result<Vec<Application>> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::APP_VIEW)
            .await?;
        self.deps.store.applications_of(cluster.id).await
    }

    /// One version, with the live status of its workloads (the cluster is asked now).
    pub async fn status(&self, actor: &Actor, cluster_id: &str, app_id: &str) -> Result<AppStatus> {
        let (cluster, app) = self.visible_app(actor, cluster_id, app_id).await?;
        let asked = async {
            let (client, _) = self.admin.admin_client(&cluster).await?;
            let set = app.apply_set(&cluster.tenant_slug);
            set_status(&client, &app.namespace, &set.selector(), true)
                .await
                .map_err(|e| Error::Conflict(e.to_string()))
        };
        let (status, unreachable) = match asked.await {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(AppStatus {
            application: app,
            status,
            unreachable,
        })
    }

    /// The server-side dry run of a deploy, with the caller's rights. Changes nothing.
    pub async fn preview(
        &self,
        actor: &Actor,
        cluster_id: &str,
        req: &DeployRequest,
    ) -> Result<DeployPreview> {
        let (cluster, acting) = self
            .authorized(actor, cluster_id, action::APP_DEPLOY)
            .await?;
        let result = self.try_preview(&cluster, acting, req).await;
        self.guard
            .audited(
                actor,
                action::APP_DEPLOY,
                &format!("{}/{}", cluster.name.as_str(), req.name.trim()),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn try_preview(
        &self,
        cluster: &Cluster,
        acting: Acting,
        req: &DeployRequest,
    ) -> Result<DeployPreview> {
        let checked = self.check(cluster, acting, req).await?;
        let (admin, _) = self.admin.admin_client(cluster).await?;
        let namespace_exists = self
            .namespace_state(&admin, cluster, &checked.namespace)
            .await?;
        let (client, applied_as) = self.client_for(cluster, acting).await?;
        let previous = self
            .deployed(cluster, &checked.name, &checked.version)
            .await?
            .map(|a| a.objects)
            .unwrap_or_default();
        let app = self.draft(cluster, acting, &checked, "");
        let set = app.apply_set(&cluster.tenant_slug);
        let resolved = resolve(&client, &checked.objects, &checked.placement, &set)
            .await
            .map_err(workload_error)?;
        let objects = dry_run(&client, &set, &resolved, &previous, namespace_exists)
            .await
            .map_err(workload_error)?;
        Ok(DeployPreview {
            name: checked.name,
            version: checked.version,
            namespace: checked.namespace,
            namespace_exists,
            applied_as,
            objects,
        })
    }

    /// Queues a deploy (or a re-deploy of the same version, which prunes what its manifests
    /// no longer hold). The manifests are checked first (syntax, limits, kinds the cluster
    /// serves, namespaces) and sealed in the vault.
    pub async fn deploy(
        &self,
        actor: &Actor,
        cluster_id: &str,
        req: &DeployRequest,
    ) -> Result<(Application, Operation)> {
        let (cluster, acting) = self
            .authorized(actor, cluster_id, action::APP_DEPLOY)
            .await?;
        let target = format!("{}/{}", cluster.name.as_str(), req.name.trim());
        let result = self.try_deploy(actor, &cluster, acting, req).await;
        self.guard
            .audited(
                actor,
                action::APP_DEPLOY,
                &target,
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn try_deploy(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        acting: Acting,
        req: &DeployRequest,
    ) -> Result<(Application, Operation)> {
        let checked = self.check(cluster, acting, req).await?;
        let (admin, _) = self.admin.admin_client(cluster).await?;
        self.namespace_state(&admin, cluster, &checked.namespace)
            .await?;
        let who = actor.to_string();
        let draft = self.draft(cluster, acting, &checked, &who);
        let set = draft.apply_set(&cluster.tenant_slug);
        // Kinds and namespaces are checked now, so that a mistake is a 4xx, not a failed
        // operation (the operation checks again with the member's rights).
        resolve(&admin, &checked.objects, &checked.placement, &set)
            .await
            .map_err(workload_error)?;
        let now = crate::clock::now();
        let op = Operation::new(
            cluster.id,
            OperationKind::AppDeploy,
            None,
            &who,
            now,
            chrono::Duration::minutes(OPERATION_MINUTES),
        );
        let event = ClusterEvent::new(
            cluster.id,
            Some(op.id),
            EventKind::State,
            format!(
                "Deploy of {} {} into namespace {} requested by {who}",
                checked.name, checked.version, checked.namespace
            ),
            now,
        );
        let audit = AuditEvent::success(
            actor,
            action::APP_DEPLOY,
            format!("{}/{}", cluster.name.as_str(), checked.name),
        )
        .in_tenant(cluster.tenant_id)
        .with_detail(format!(
            "version {} in namespace {}, {} object(s)",
            checked.version,
            checked.namespace,
            checked.objects.len()
        ));
        // The manifests are sealed before the version is queued: a worker that picks the
        // operation up at once finds them. A re-deploy replaces them.
        let stored_id = match self
            .deployed(cluster, &checked.name, &checked.version)
            .await?
        {
            Some(old) => old.id,
            None => draft.id,
        };
        let at = names::application_manifests(cluster.tenant_id, stored_id);
        let previous = self.deps.vault.get(&at).await?;
        self.deps
            .vault
            .put(&at, &Secret::new(req.manifests.as_bytes().to_vec()))
            .await?;
        let mut draft = draft;
        draft.id = stored_id;
        match self
            .deps
            .store
            .queue_app_deploy(&draft, &op, &event, &audit)
            .await
        {
            Ok(app) => {
                let mut op = op;
                op.target = Some(OperationTarget::Application(app.id));
                Ok((app, op))
            }
            Err(e) => {
                // Nothing was queued: the running version keeps its manifests.
                match previous {
                    Some(p) => self.deps.vault.put(&at, &p).await?,
                    None => {
                        self.deps.vault.delete(&at).await?;
                    }
                }
                Err(e)
            }
        }
    }

    /// The version `name` `version` of the cluster, if it was deployed before.
    async fn deployed(
        &self,
        cluster: &Cluster,
        name: &str,
        version: &str,
    ) -> Result<Option<Application>> {
        Ok(self
            .deps
            .store
            .applications_of(cluster.id)
            .await?
            .into_iter()
            .find(|a| a.name == name && a.version == version))
    }

    /// Queues the removal of a version: every object it created, and its namespace when
    /// KQueen made it.
    pub async fn delete(&self, actor: &Actor, cluster_id: &str, app_id: &str) -> Result<Operation> {
        let (cluster, app) = self.visible_app(actor, cluster_id, app_id).await?;
        let target = format!("{}/{}", cluster.name.as_str(), app.name);
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                action::APP_DELETE,
                &target,
                Some(cluster.tenant_id),
            )
            .await?;
        let who = actor.to_string();
        let now = crate::clock::now();
        let mut op = Operation::new(
            cluster.id,
            OperationKind::AppDelete,
            Some(OperationTarget::Application(app.id)),
            &who,
            now,
            chrono::Duration::minutes(OPERATION_MINUTES),
        );
        op.target = Some(OperationTarget::Application(app.id));
        let event = ClusterEvent::new(
            cluster.id,
            Some(op.id),
            EventKind::State,
            format!(
                "Removal of {} {} (namespace {}) requested by {who}",
                app.name, app.version, app.namespace
            ),
            now,
        );
        let audit = AuditEvent::success(actor, action::APP_DELETE, target.clone())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!(
                "version {} in namespace {}",
                app.version, app.namespace
            ));
        let result = self
            .deps
            .store
            .queue_app_delete(app.id, &op, &event, &audit)
            .await
            .map(|()| op);
        self.guard
            .audited(
                actor,
                action::APP_DELETE,
                &target,
                Some(cluster.tenant_id),
                result,
            )
            .await
    }
}

impl From<WorkloadError> for Error {
    fn from(e: WorkloadError) -> Self {
        workload_error(e)
    }
}
