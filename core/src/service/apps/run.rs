//! The work of application operations, run by the engine: a deploy makes the version's
//! namespace (with KQueen's credential: members may create namespaces anyway), gives the
//! member their role there, then applies the manifests with the member's token and prunes;
//! a delete removes every object of the version's ApplySet, then the namespace KQueen made.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{Acting, Apps};
use crate::cluster::{Cluster, Operation, OperationKind};
use crate::provisioner::Reporter;
use crate::vault::names;
use crate::workloads::application::Application;
use crate::workloads::apply::{apply_set, delete_set};
use crate::workloads::manifest::{parse_manifests, ManifestLimits};
use crate::workloads::refs::{
    label_value, APPLICATION_LABEL, FIELD_MANAGER, TENANT_LABEL, VERSION_LABEL,
};
use crate::workloads::resolve::{resolve, Placement};
use crate::workloads::{api_error, WorkloadError};
use crate::Error;

/// What a workload failure means to a caller of a use case.
pub fn workload_error(e: WorkloadError) -> Error {
    match e {
        WorkloadError::Invalid(v) => Error::Invalid(v),
        WorkloadError::Refused(m) => Error::Conflict(m),
        WorkloadError::Transient(m) => Error::Conflict(format!("{m}; try again")),
    }
}

/// A domain error inside an operation: client errors are final, the rest may pass.
pub(crate) fn op_error(e: Error) -> WorkloadError {
    if e.is_client_error() {
        WorkloadError::Refused(e.to_string())
    } else {
        WorkloadError::Transient(e.to_string())
    }
}

impl Apps {
    /// Runs an application operation of `cluster` (see the module doc).
    pub(crate) async fn run(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: &Reporter,
    ) -> Result<String, WorkloadError> {
        let app = self.app_of(op).await?;
        match op.kind {
            OperationKind::AppDeploy => self.run_deploy(cluster, &app, reporter).await,
            _ => self.run_delete(cluster, &app, reporter).await,
        }
    }

    /// Records a failed operation on its version.
    pub(crate) async fn failed(&self, op: &Operation, reason: &str) {
        let Ok(app) = self.app_of(op).await else {
            return;
        };
        let now = crate::clock::now();
        let result = match op.kind {
            OperationKind::AppDeploy => {
                self.deps
                    .store
                    .finish_app_deploy(app.id, Err(reason), now)
                    .await
            }
            _ => {
                self.deps
                    .store
                    .finish_app_delete(app.id, Err(reason), now)
                    .await
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "cannot record a failed application operation");
        }
    }

    async fn app_of(&self, op: &Operation) -> Result<Application, WorkloadError> {
        let id = op.application().map_err(WorkloadError::Refused)?;
        self.deps.store.application(id).await.map_err(op_error)
    }

    fn acting(app: &Application) -> Acting {
        match app.user_id {
            Some(u) => Acting::Member(u),
            None => Acting::Kqueen,
        }
    }

    async fn run_deploy(
        &self,
        cluster: &Cluster,
        app: &Application,
        reporter: &Reporter,
    ) -> Result<String, WorkloadError> {
        reporter.step(format!("Deploying {} {}", app.name, app.version));
        reporter.progress(5);
        let at = names::application_manifests(cluster.tenant_id, app.id);
        let text = self
            .deps
            .vault
            .get(&at)
            .await
            .map_err(op_error)?
            .ok_or_else(|| WorkloadError::Refused("the version's manifests are gone".into()))?;
        let text = String::from_utf8(text.expose().to_vec())
            .map_err(|_| WorkloadError::Refused("the stored manifests are not UTF-8".into()))?;
        let objects =
            parse_manifests(&text, &ManifestLimits::default()).map_err(WorkloadError::Invalid)?;
        let (admin, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        reporter.step(format!("Preparing namespace {}", app.namespace));
        self.ensure_namespace(&admin, cluster, app).await?;
        reporter.progress(15);
        let acting = Self::acting(app);
        let (client, who) = self.client_for(cluster, acting).await.map_err(op_error)?;
        reporter.log(format!("Applying as {who}"));
        if matches!(acting, Acting::Member(_)) {
            wait_for_rights(&client, &app.namespace).await?;
        }
        let cluster_scoped = self
            .may_apply_cluster_scoped(cluster, acting)
            .await
            .map_err(op_error)?;
        let place = Placement {
            namespace: app.namespace.clone(),
            other_namespaces: false,
            cluster_scoped,
            cluster_name: cluster.name.as_str().to_owned(),
        };
        let set = app.apply_set(&cluster.tenant_slug);
        let resolved = resolve(&client, &objects, &place, &set).await?;
        reporter.step(format!("Applying {} object(s)", resolved.len()));
        reporter.progress(30);
        let report = |line: &str| reporter.log(line);
        let applied = apply_set(&client, &set, &resolved, &app.objects, &report).await?;
        let pruned = app
            .objects
            .iter()
            .filter(|o| !applied.iter().any(|a| a.same_object(o)))
            .count();
        reporter.progress(95);
        self.deps
            .store
            .finish_app_deploy(app.id, Ok(&applied), crate::clock::now())
            .await
            .map_err(op_error)?;
        Ok(format!(
            "Deployed {} {} into namespace {}: {} object(s) applied{}",
            app.name,
            app.version,
            app.namespace,
            applied.len(),
            if pruned > 0 {
                format!(", {pruned} pruned")
            } else {
                String::new()
            }
        ))
    }

    async fn run_delete(
        &self,
        cluster: &Cluster,
        app: &Application,
        reporter: &Reporter,
    ) -> Result<String, WorkloadError> {
        reporter.step(format!("Removing {} {}", app.name, app.version));
        let (admin, _) = self.admin.admin_client(cluster).await.map_err(op_error)?;
        // With the member's rights while they have them; a version whose deployer left the
        // tenant is removed with KQueen's (only what its ApplySet holds).
        let client = match self.client_for(cluster, Self::acting(app)).await {
            Ok((c, _)) => c,
            Err(_) => admin.clone(),
        };
        let set = app.apply_set(&cluster.tenant_slug);
        let report = |line: &str| reporter.log(line);
        // Also what a failed first deploy applied before it failed: found by the set's
        // label among the kinds its manifests hold.
        let mut known = app.objects.clone();
        known.extend(self.manifest_refs(cluster, app, &client).await);
        let gone = delete_set(&client, &set, &known, &report).await?;
        reporter.progress(70);
        let namespaces: Api<Namespace> = Api::all(admin);
        let ours = namespaces
            .get_opt(&app.namespace)
            .await
            .map_err(|e| api_error(e, "read namespaces"))?
            .is_some_and(|ns| made_for(&ns, app));
        if ours {
            match namespaces
                .delete(&app.namespace, &DeleteParams::background())
                .await
            {
                Ok(_) => reporter.log(format!("Deleted namespace {}", app.namespace)),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(api_error(e, &format!("delete namespace {}", app.namespace))),
            }
        }
        let _ = self
            .deps
            .vault
            .delete(&names::application_manifests(cluster.tenant_id, app.id))
            .await;
        self.deps
            .store
            .finish_app_delete(app.id, Ok(()), crate::clock::now())
            .await
            .map_err(op_error)?;
        Ok(format!(
            "Removed {} {}: {} object(s) deleted{}",
            app.name,
            app.version,
            gone.len(),
            if ours {
                format!(", namespace {} deleted", app.namespace)
            } else {
                String::new()
            }
        ))
    }

    /// Where the version's stored manifests put their objects (empty when they are gone or
    /// no longer resolve).
    async fn manifest_refs(
        &self,
        cluster: &Cluster,
        app: &Application,
        client: &kube::Client,
    ) -> Vec<crate::workloads::refs::ObjectRef> {
        let at = names::application_manifests(cluster.tenant_id, app.id);
        let Ok(Some(text)) = self.deps.vault.get(&at).await else {
            return Vec::new();
        };
        let Ok(objects) = parse_manifests(
            &String::from_utf8_lossy(text.expose()),
            &ManifestLimits::default(),
        ) else {
            return Vec::new();
        };
        let place = Placement {
            namespace: app.namespace.clone(),
            other_namespaces: false,
            cluster_scoped: true,
            cluster_name: cluster.name.as_str().to_owned(),
        };
        let set = app.apply_set(&cluster.tenant_slug);
        resolve(client, &objects, &place, &set)
            .await
            .map(|r| r.into_iter().map(|o| o.target).collect())
            .unwrap_or_default()
    }

    /// Creates the version's namespace, labelled for it, unless it exists (then it must be
    /// open to the tenant).
    async fn ensure_namespace(
        &self,
        admin: &kube::Client,
        cluster: &Cluster,
        app: &Application,
    ) -> Result<(), WorkloadError> {
        let api: Api<Namespace> = Api::all(admin.clone());
        if let Some(ns) = api
            .get_opt(&app.namespace)
            .await
            .map_err(|e| api_error(e, "read namespaces"))?
        {
            if ns.metadata.deletion_timestamp.is_some() {
                return Err(WorkloadError::Transient(format!(
                    "namespace {} is still being deleted",
                    app.namespace
                )));
            }
            if !crate::kubernetes::open_to_tenant(&ns) {
                return Err(WorkloadError::Refused(format!(
                    "namespace {} is closed to tenants",
                    app.namespace
                )));
            }
            return Ok(());
        }
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": app.namespace,
                "labels": {
                    APPLICATION_LABEL: label_value(&app.name),
                    VERSION_LABEL: label_value(&app.version),
                    TENANT_LABEL: label_value(&cluster.tenant_slug),
                },
            },
        }))
        .map_err(|e| WorkloadError::Refused(e.to_string()))?;
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(api_error(e, &format!("create namespace {}", app.namespace))),
        }?;
        // Labels stay KQueen's even if someone edits them.
        let _ = api
            .patch(
                &app.namespace,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&ns),
            )
            .await;
        Ok(())
    }
}

/// Whether KQueen made `ns` for this version (its labels say so).
fn made_for(ns: &Namespace, app: &Application) -> bool {
    let labels = ns.metadata.labels.clone().unwrap_or_default();
    labels.get(APPLICATION_LABEL) == Some(&label_value(&app.name))
        && labels.get(VERSION_LABEL) == Some(&label_value(&app.version))
}

/// Waits until the member's new RoleBinding in `namespace` is in force (the API server's
/// authorizer learns of it within moments), so that the first apply is not refused by a
/// stale cache.
async fn wait_for_rights(client: &kube::Client, namespace: &str) -> Result<(), WorkloadError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some("create".into()),
                resource: Some("configmaps".into()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    for _ in 0..50 {
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| api_error(e, "review access"))?;
        if answer.status.is_some_and(|s| s.allowed) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(WorkloadError::Refused(format!(
        "your role gives no rights in namespace {namespace}"
    )))
}
