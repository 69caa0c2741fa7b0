//! Server-side apply of an ApplySet: the parent ConfigMap first (its group-kinds a superset
//! of old and new members, as KEP-3659 asks), then every object with field manager
//! [`FIELD_MANAGER`], then the prune of members no longer in the manifests. The same code
//! does the dry run (every object applied with `dryRun=All`, compared with what runs) and
//! the removal of a whole set.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::diff::{diff_objects, FieldChange};
use super::errors::{api_error, WorkloadError};
use super::refs::{
    ApplySet, ObjectRef, APPLYSET_ID_LABEL, FIELD_MANAGER, GROUP_KINDS_ANNOTATION, TOOLING,
    TOOLING_ANNOTATION,
};
use super::resolve::Resolved;

/// What a deploy would do to one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum Change {
    /// Does not exist yet.
    Created,
    /// Exists; these fields change.
    Changed {
        fields: Vec<FieldChange>,
    },
    Unchanged,
    /// Exists in the set but not in the manifests: removed.
    Pruned,
}

/// One object of a dry run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectDiff {
    pub object: ObjectRef,
    #[serde(flatten)]
    pub change: Change,
}

fn api_for(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

fn resource_of(r: &ObjectRef) -> ApiResource {
    ApiResource {
        group: r.group.clone(),
        version: r.version.clone(),
        api_version: if r.group.is_empty() {
            r.version.clone()
        } else {
            format!("{}/{}", r.group, r.version)
        },
        kind: r.kind.clone(),
        plural: r.plural.clone(),
    }
}

fn apply_params(dry_run: bool) -> PatchParams {
    // Forced: KQueen owns what its manifests say, even fields someone changed by hand.
    let p = PatchParams::apply(FIELD_MANAGER).force();
    if dry_run {
        p.dry_run()
    } else {
        p
    }
}

/// Server-side dry run of `objects` against what runs: each object created, changed (which
/// fields) or unchanged, plus the members of `set` that `previous` recorded and a deploy
/// would prune. `namespace_exists` false: the namespace is made at deploy time, so every
/// object is new and the server checks them then (admission refuses objects in a namespace
/// that does not exist, even in a dry run).
pub async fn dry_run(
    client: &kube::Client,
    set: &ApplySet,
    objects: &[Resolved],
    previous: &[ObjectRef],
    namespace_exists: bool,
) -> Result<Vec<ObjectDiff>, WorkloadError> {
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        if !namespace_exists && obj.target.namespace.as_deref() == Some(set.namespace.as_str()) {
            out.push(ObjectDiff {
                object: obj.target.clone(),
                change: Change::Created,
            });
            continue;
        }
        let api = api_for(client, &obj.resource, obj.target.namespace.as_deref());
        let live = api
            .get_opt(&obj.target.name)
            .await
            .map_err(|e| api_error(e, &format!("read {}", obj.target)))?;
        let dry = write_object(&api, obj, live.as_ref(), true)
            .await
            .map_err(|e| api_error(e, &format!("apply {} (dry run)", obj.target)))?;
        let change = match live {
            None => Change::Created,
            Some(live) => {
                let fields = diff_objects(&to_value(&live), &to_value(&dry));
                if fields.is_empty() {
                    Change::Unchanged
                } else {
                    Change::Changed { fields }
                }
            }
        };
        out.push(ObjectDiff {
            object: obj.target.clone(),
            change,
        });
    }
    if namespace_exists {
        let current: Vec<ObjectRef> = objects.iter().map(|o| o.target.clone()).collect();
        for gone in members_to_prune(client, set, previous, &current).await? {
            out.push(ObjectDiff {
                object: gone,
                change: Change::Pruned,
            });
        }
    }
    Ok(out)
}

/// Kinds whose server-side apply is broken on supported API servers: Kubernetes 1.20 panics
/// on an apply of an APIService (kubernetes/kubernetes#89264), so those are created or
/// replaced instead.
fn needs_replace(obj: &Resolved) -> bool {
    obj.target.group == "apiregistration.k8s.io" && obj.target.kind == "APIService"
}

/// Writes one object: server-side apply, or create/replace for [`needs_replace`] kinds
/// (`live` is what runs, read by the caller).
async fn write_object(
    api: &Api<DynamicObject>,
    obj: &Resolved,
    live: Option<&DynamicObject>,
    dry_run: bool,
) -> Result<DynamicObject, kube::Error> {
    if !needs_replace(obj) {
        return api
            .patch(
                &obj.target.name,
                &apply_params(dry_run),
                &Patch::Apply(&obj.body),
            )
            .await;
    }
    let mut body: DynamicObject =
        serde_json::from_value(obj.body.clone()).map_err(kube::Error::SerdeError)?;
    let pp = PostParams {
        dry_run,
        field_manager: Some(FIELD_MANAGER.into()),
    };
    match live {
        None => api.create(&pp, &body).await,
        Some(live) => {
            body.metadata.resource_version = live.metadata.resource_version.clone();
            api.replace(&obj.target.name, &pp, &body).await
        }
    }
}

fn to_value(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// Applies `objects` as members of `set` (see the module doc) and prunes members no longer
/// among them; `report` hears of each object. Returns what the set holds now.
pub async fn apply_set(
    client: &kube::Client,
    set: &ApplySet,
    objects: &[Resolved],
    previous: &[ObjectRef],
    report: &(dyn Fn(&str) + Send + Sync),
) -> Result<Vec<ObjectRef>, WorkloadError> {
    let current: Vec<ObjectRef> = objects.iter().map(|o| o.target.clone()).collect();
    let mut kinds: BTreeSet<String> = current.iter().map(ObjectRef::group_kind).collect();
    kinds.extend(previous.iter().map(ObjectRef::group_kind));
    // A namespace among the members (an addon's own) must exist before the parent in it.
    let is_namespace = |o: &&Resolved| o.target.kind == "Namespace" && o.target.group.is_empty();
    let (namespaces, others): (Vec<&Resolved>, Vec<&Resolved>) =
        objects.iter().partition(is_namespace);
    for obj in namespaces {
        let api = api_for(client, &obj.resource, None);
        write_object(&api, obj, None, false)
            .await
            .map_err(|e| api_error(e, &format!("apply {}", obj.target)))?;
        report(&format!("Applied {}", obj.target));
    }
    apply_parent(client, set, &kinds).await?;
    for obj in others {
        let api = api_for(client, &obj.resource, obj.target.namespace.as_deref());
        let live = if needs_replace(obj) {
            api.get_opt(&obj.target.name)
                .await
                .map_err(|e| api_error(e, &format!("read {}", obj.target)))?
        } else {
            None
        };
        write_object(&api, obj, live.as_ref(), false)
            .await
            .map_err(|e| api_error(e, &format!("apply {}", obj.target)))?;
        report(&format!("Applied {}", obj.target));
    }
    for gone in members_to_prune(client, set, previous, &current).await? {
        delete_object(client, &gone).await?;
        report(&format!("Pruned {gone}"));
    }
    let kinds: BTreeSet<String> = current.iter().map(ObjectRef::group_kind).collect();
    apply_parent(client, set, &kinds).await?;
    Ok(current)
}

/// Deletes every member of `set` (those `previous` recorded, and any other object of their
/// kinds carrying the set's label), then the parent. Returns what was deleted.
pub async fn delete_set(
    client: &kube::Client,
    set: &ApplySet,
    previous: &[ObjectRef],
    report: &(dyn Fn(&str) + Send + Sync),
) -> Result<Vec<ObjectRef>, WorkloadError> {
    let mut gone = members_to_prune(client, set, previous, &[]).await?;
    // Namespaces last: deleting one takes the parent and the rest with it, unrecorded.
    gone.sort_by_key(|r| r.kind == "Namespace" && r.group.is_empty());
    for r in gone
        .iter()
        .filter(|r| !(r.kind == "Namespace" && r.group.is_empty()))
    {
        delete_object(client, r).await?;
        report(&format!("Deleted {r}"));
    }
    let parents: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &set.namespace);
    match parents
        .delete(&set.parent, &DeleteParams::background())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => {
            return Err(api_error(
                e,
                &format!("delete ConfigMap {}/{}", set.namespace, set.parent),
            ))
        }
    }
    for r in gone
        .iter()
        .filter(|r| r.kind == "Namespace" && r.group.is_empty())
    {
        delete_object(client, r).await?;
        report(&format!("Deleted {r}"));
    }
    Ok(gone)
}

async fn delete_object(client: &kube::Client, r: &ObjectRef) -> Result<(), WorkloadError> {
    let api = api_for(client, &resource_of(r), r.namespace.as_deref());
    match api.delete(&r.name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(api_error(e, &format!("delete {r}"))),
    }
}

/// The members of `set` that are not in `current`: found by the set's label among the kinds
/// of `previous` and `current` (so that objects a crashed deploy applied before recording
/// them are found too), plus recorded ones the label query could not see.
async fn members_to_prune(
    client: &kube::Client,
    set: &ApplySet,
    previous: &[ObjectRef],
    current: &[ObjectRef],
) -> Result<Vec<ObjectRef>, WorkloadError> {
    let mut kinds: BTreeMap<(String, String), ObjectRef> = BTreeMap::new();
    for r in previous.iter().chain(current) {
        kinds
            .entry((r.group.clone(), r.kind.clone()))
            .or_insert_with(|| r.clone());
    }
    let selector = ListParams::default().labels(&set.selector());
    let mut found: BTreeSet<ObjectRef> = BTreeSet::new();
    for sample in kinds.values() {
        let resource = resource_of(sample);
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let list = match api.list(&selector).await {
            Ok(l) => l.items,
            // A member may list only in its namespaces: ask there.
            Err(kube::Error::Api(s)) if s.code == 403 && sample.namespace.is_some() => {
                let mut items = Vec::new();
                let namespaces: BTreeSet<&String> = previous
                    .iter()
                    .chain(current)
                    .filter(|r| r.group == sample.group && r.kind == sample.kind)
                    .filter_map(|r| r.namespace.as_ref())
                    .collect();
                for ns in namespaces {
                    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource);
                    items.extend(
                        api.list(&selector)
                            .await
                            .map_err(|e| api_error(e, &format!("list {} in {ns}", sample.plural)))?
                            .items,
                    );
                }
                items
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
            Err(e) => return Err(api_error(e, &format!("list {}", sample.plural))),
        };
        for item in list {
            found.insert(ObjectRef {
                namespace: item.metadata.namespace.clone(),
                name: item.metadata.name.clone().unwrap_or_default(),
                ..sample.clone()
            });
        }
    }
    found.extend(previous.iter().cloned());
    Ok(found
        .into_iter()
        .filter(|r| !current.iter().any(|c| c.same_object(r)))
        .fold(Vec::new(), |mut acc: Vec<ObjectRef>, r| {
            if !acc.iter().any(|a| a.same_object(&r)) {
                acc.push(r);
            }
            acc
        }))
}

async fn apply_parent(
    client: &kube::Client,
    set: &ApplySet,
    kinds: &BTreeSet<String>,
) -> Result<(), WorkloadError> {
    let mut labels: BTreeMap<String, String> = set.labels.clone();
    labels.insert(APPLYSET_ID_LABEL.into(), set.id.clone());
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": set.parent,
            "namespace": set.namespace,
            "labels": labels,
            "annotations": {
                TOOLING_ANNOTATION: TOOLING,
                GROUP_KINDS_ANNOTATION: kinds.iter().cloned().collect::<Vec<_>>().join(","),
            },
        },
    });
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &set.namespace,
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    api.patch(&set.parent, &apply_params(false), &Patch::Apply(&body))
        .await
        .map_err(|e| {
            api_error(
                e,
                &format!(
                    "apply the ApplySet ConfigMap {}/{}",
                    set.namespace, set.parent
                ),
            )
        })?;
    Ok(())
}
