//! A deleted Cluster and the finalizer that holds it until its Machines are gone.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::conditions::Status;
use super::machines::delete_all;
use super::FINALIZER;

/// A deleted Cluster: first its Machines and Secret go (phase `Deleting`), on a later
/// tick its finalizer.
pub(super) async fn delete(
    client: &Client,
    v2: bool,
    cluster: &DynamicObject,
    api: &Api<DynamicObject>,
    machines: &Api<DynamicObject>,
    mut status: Status,
) -> Result<(), String> {
    let name = cluster.name_any();
    let deleted = delete_all(machines, &name).await?;
    if deleted > 0 || cluster.data["status"]["phase"] != "Deleting" {
        let ns = cluster.namespace().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
        match secrets
            .delete(&format!("{name}-kubeconfig"), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(format!("delete kubeconfig Secret: {e}")),
        }
        status.put(&["phase"], json!("Deleting"));
        let ready = if v2 { "Available" } else { "Ready" };
        status.set(ready, false, "Deleting", "Deleting machines");
        return status.write(api, cluster).await;
    }
    let finalizers: Vec<String> = cluster
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if finalizers.len() == cluster.finalizers().len() {
        return Ok(());
    }
    set_finalizers(cluster, api, finalizers).await
}

pub(super) async fn ensure_finalizer(
    cluster: &DynamicObject,
    api: &Api<DynamicObject>,
) -> Result<(), String> {
    if cluster.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(());
    }
    let mut finalizers = cluster.finalizers().to_vec();
    finalizers.push(FINALIZER.to_owned());
    set_finalizers(cluster, api, finalizers).await
}

/// Replaces the finalizers, failing (to retry) when the Cluster changed meanwhile.
async fn set_finalizers(
    cluster: &DynamicObject,
    api: &Api<DynamicObject>,
    finalizers: Vec<String>,
) -> Result<(), String> {
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": cluster.resource_version(),
    }});
    api.patch(
        &cluster.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("set finalizers: {e}"))
}
