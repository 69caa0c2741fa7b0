//! Clusters that exist in the management cluster without KQueen having made them: listed for
//! operators, and taken over (labelled as the KQueen cluster's, guarded by the object's
//! resourceVersion so two adoptions cannot both win) when one is adopted.

use kube::api::{ListParams, Patch};
use serde_json::{json, Value};
use uuid::Uuid;

use super::management::{failed, kube_error, Management};
use super::{is_ours, patch_params, status, topology, Target};
use crate::provisioner::{Discovered, OpContext, ProvisionError};

/// The Clusters the management cluster holds: in every namespace when the credential may
/// list them all, else in the provider's namespace.
pub(super) async fn discover(ctx: &OpContext) -> Result<Vec<Discovered>, ProvisionError> {
    let m = Management::connect(ctx).await?;
    let list = match m.all_clusters().list(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(s)) if s.code == 403 => {
            let ns = super::settings::namespace(&ctx.provider_config, &ctx.tenant);
            m.clusters(&ns)
                .list(&ListParams::default())
                .await
                .map_err(|e| kube_error("cannot list the Clusters", e))?
        }
        Err(e) => return Err(kube_error("cannot list the Clusters", e)),
    };
    let mut found = Vec::new();
    for item in list.items {
        let Ok(object) = serde_json::to_value(&item) else {
            continue;
        };
        found.push(describe(&object));
    }
    found.sort_by(|a, b| a.reference.cmp(&b.reference));
    Ok(found)
}

/// One Cluster as discovery lists it (from the object alone: one request for the whole list,
/// however many clusters the management cluster holds).
fn describe(object: &Value) -> Discovered {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let namespace = text("/metadata/namespace").unwrap_or_default();
    let name = text("/metadata/name").unwrap_or_default();
    let observed = status::observe(object);
    let has_topology = object.pointer("/spec/topology").is_some();
    let ready = observed.control_plane_available;
    let control_plane = object
        .pointer("/spec/topology/controlPlane/replicas")
        .and_then(Value::as_u64)
        .map(|n| n as u32);
    Discovered {
        reference: format!("{namespace}/{name}"),
        class: text("/spec/topology/classRef/name").or_else(|| text("/spec/topology/class")),
        kubernetes_version: topology::version_of(object).map(str::to_owned),
        phase: observed.phase.clone(),
        ready,
        control_plane_nodes: control_plane,
        worker_nodes: has_topology.then(|| topology::pools_of(object).iter().map(|(_, r)| r).sum()),
        adopted_by: text(&format!(
            "/metadata/labels/{}",
            topology::CLUSTER_LABEL.replace('/', "~1")
        ))
        .and_then(|id| Uuid::parse_str(&id).ok()),
        name,
        location: namespace,
    }
}

/// Takes over the Cluster `reference` names for this KQueen cluster: refused when another
/// KQueen cluster holds it.
pub(super) async fn take_over(
    ctx: &OpContext,
    m: &Management,
    reference: &str,
) -> Result<Target, ProvisionError> {
    let at = Target::parse(reference).ok_or_else(|| {
        failed(format!(
            "'{reference}' does not name a Cluster (namespace/name)"
        ))
    })?;
    ctx.reporter.step(format!("Adopting the Cluster {at}"));
    let Some(object) = m.cluster(&at.namespace, &at.name).await? else {
        return Err(failed(format!(
            "the Cluster {at} does not exist in the management cluster"
        )));
    };
    if is_ours(ctx, &object) {
        return Ok(at);
    }
    let holder = object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(topology::CLUSTER_LABEL))
        .and_then(Value::as_str);
    if let Some(holder) = holder {
        return Err(failed(format!(
            "the Cluster {at} already belongs to KQueen cluster {holder}"
        )));
    }
    let patch = json!({"metadata": {
        "resourceVersion": object.pointer("/metadata/resourceVersion"),
        "labels": {
            topology::CLUSTER_LABEL: ctx.cluster_id.to_string(),
            topology::TENANT_LABEL: ctx.tenant,
        },
    }});
    m.clusters(&at.namespace)
        .patch(&at.name, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(|e| kube_error(&format!("cannot label the Cluster {at}"), e))?;
    ctx.reporter.log(format!(
        "the Cluster {at} is labelled as KQueen cluster {}",
        ctx.cluster_id
    ));
    Ok(at)
}

/// Removes KQueen's labels from a Cluster whose adoption did not finish.
pub(super) async fn release(
    ctx: &OpContext,
    m: &Management,
    at: &Target,
) -> Result<(), ProvisionError> {
    let _ = ctx;
    let patch = json!({"metadata": {"labels": {
        topology::CLUSTER_LABEL: null,
        topology::TENANT_LABEL: null,
    }}});
    m.clusters(&at.namespace)
        .patch(&at.name, &patch_params(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(|e| kube_error(&format!("cannot unlabel the Cluster {at}"), e))
}
