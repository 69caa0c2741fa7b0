//! A backup restored into a cluster: first the plan (each object to create, already there
//! and equal, already there and different, or impossible here and why), then the restore
//! itself, stage by stage ([`super::plan::Stage`]): objects are created, never overwritten;
//! once the backup's CustomResourceDefinitions are created, the restore waits until the
//! cluster serves their kinds before it creates their objects.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::ApiResource;
use kube::discovery::Scope;
use serde_json::Value;

use super::clean::clean;
use super::plan::{
    defined_kinds, group_version, selected, stage_of_object, text, Fate, RestoreItem, Stage,
};
use crate::workloads::{api_error, WorkloadError};

/// How long a restore waits for the kinds of the CRDs it created to be served.
const SERVED_WAIT: Duration = Duration::from_secs(60);

/// What a cluster serves: each `(group, version, kind)` with its resource and scope.
struct Served(HashMap<(String, String, String), (ApiResource, Scope)>);

impl Served {
    async fn read(client: &kube::Client) -> Result<Self, WorkloadError> {
        let mut served = HashMap::new();
        // A group the cluster cannot describe now serves nothing a restore can use.
        for (_, group) in super::collect::api_groups(client).await? {
            let Ok(group) = group else {
                continue;
            };
            let versions: Vec<String> = group.versions().map(str::to_owned).collect();
            for version in versions {
                for (resource, caps) in group.versioned_resources(&version) {
                    let key = (
                        resource.group.clone(),
                        resource.version.clone(),
                        resource.kind.clone(),
                    );
                    served.insert(key, (resource, caps.scope));
                }
            }
        }
        Ok(Self(served))
    }

    fn of(&self, object: &Value) -> Option<&(ApiResource, Scope)> {
        let (group, version) = group_version(text(object, &["apiVersion"]));
        self.0.get(&(
            group.to_owned(),
            version.to_owned(),
            text(object, &["kind"]).to_owned(),
        ))
    }
}

fn api_of(
    client: &kube::Client,
    resource: &ApiResource,
    scope: &Scope,
    object: &Value,
) -> Api<DynamicObject> {
    match scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            text(object, &["metadata", "namespace"]),
            resource,
        ),
        Scope::Cluster => Api::all_with(client.clone(), resource),
    }
}

fn what(object: &Value) -> String {
    let name = text(object, &["metadata", "name"]);
    match text(object, &["metadata", "namespace"]) {
        "" => format!("{} {name}", text(object, &["kind"])),
        ns => format!("{} {ns}/{name}", text(object, &["kind"])),
    }
}

/// The fate of `object`, which the cluster serves, as it is there now.
async fn compare(api: &Api<DynamicObject>, object: &Value) -> Result<Fate, WorkloadError> {
    let name = text(object, &["metadata", "name"]);
    let live = api
        .get_opt(name)
        .await
        .map_err(|e| api_error(e, &format!("read {}", what(object))))?;
    Ok(match live {
        None => Fate::WillCreate,
        Some(live) => {
            let live = serde_json::to_value(live).unwrap_or_default();
            let api_version = text(object, &["apiVersion"]);
            if clean(api_version, text(object, &["kind"]), live) == *object {
                Fate::Unchanged
            } else {
                Fate::Differs
            }
        }
    })
}

/// Why `object`, whose kind the cluster does not serve, cannot be restored; None when a CRD
/// of the backup defines it (it is served once that CRD is created).
fn unserved(object: &Value, defined: &BTreeSet<(String, String, String)>) -> Option<String> {
    let (group, version) = group_version(text(object, &["apiVersion"]));
    let kind = text(object, &["kind"]);
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    if defined.contains(&key) {
        return None;
    }
    Some(format!(
        "the cluster does not serve {} {kind}, and the backup has no CustomResourceDefinition \
         for it",
        text(object, &["apiVersion"])
    ))
}

/// The objects of `objects` a restore limited to `namespaces` takes, in restore order.
fn in_order(objects: Vec<Value>, namespaces: &[String]) -> Vec<Value> {
    let mut kept: Vec<Value> = objects
        .into_iter()
        .filter(|o| selected(o, namespaces))
        .collect();
    kept.sort_by_key(stage_of_object);
    kept
}

/// What a restore of `objects` (a backup's, Secrets included when it kept them) into the
/// cluster `client` reaches would do; changes nothing.
pub async fn plan(
    client: &kube::Client,
    objects: Vec<Value>,
    namespaces: &[String],
) -> Result<Vec<RestoreItem>, WorkloadError> {
    let served = Served::read(client).await?;
    let defined = defined_kinds(&objects);
    let mut items = Vec::new();
    for object in in_order(objects, namespaces) {
        let item = match served.of(&object) {
            Some((resource, scope)) => {
                let api = api_of(client, resource, scope, &object);
                RestoreItem::of(&object, compare(&api, &object).await?, None)
            }
            None => match unserved(&object, &defined) {
                Some(why) => RestoreItem::of(&object, Fate::Cannot, Some(why)),
                None => RestoreItem::of(
                    &object,
                    Fate::WillCreate,
                    Some("once its CustomResourceDefinition is created".into()),
                ),
            },
        };
        items.push(item);
    }
    Ok(items)
}

/// Waits (bounded) until the cluster serves every kind of `wanted`; the discovery then.
async fn served_with(
    client: &kube::Client,
    wanted: &BTreeSet<(String, String, String)>,
) -> Result<Served, WorkloadError> {
    let deadline = tokio::time::Instant::now() + SERVED_WAIT;
    loop {
        let served = Served::read(client).await?;
        let missing = wanted.iter().any(|k| !served.0.contains_key(k));
        if !missing || tokio::time::Instant::now() >= deadline {
            return Ok(served);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Restores `objects` into the cluster `client` reaches, stage by stage (see the module
/// doc); `progress(done, of)` as it goes. Objects the cluster refuses are reported as
/// failed with its reason; the restore goes on with the others.
pub async fn restore(
    client: &kube::Client,
    objects: Vec<Value>,
    namespaces: &[String],
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> Result<Vec<RestoreItem>, WorkloadError> {
    let defined = defined_kinds(&objects);
    let ordered = in_order(objects, namespaces);
    let mut served = Served::read(client).await?;
    let mut waited = false;
    let mut items = Vec::with_capacity(ordered.len());
    for (i, object) in ordered.iter().enumerate() {
        progress(i, ordered.len());
        if !waited && stage_of_object(object) > Stage::Definitions {
            served = served_with(client, &defined).await?;
            waited = true;
        }
        let Some((resource, scope)) = served.of(object) else {
            let why = unserved(object, &defined).unwrap_or_else(|| {
                format!(
                    "the cluster did not serve {} {} within {} s of its \
                     CustomResourceDefinition's creation",
                    text(object, &["apiVersion"]),
                    text(object, &["kind"]),
                    SERVED_WAIT.as_secs()
                )
            });
            items.push(RestoreItem::of(object, Fate::Cannot, Some(why)));
            continue;
        };
        let api = api_of(client, resource, scope, object);
        let new: DynamicObject = match serde_json::from_value(object.clone()) {
            Ok(o) => o,
            Err(e) => {
                items.push(RestoreItem::of(object, Fate::Failed, Some(e.to_string())));
                continue;
            }
        };
        let item = match api.create(&PostParams::default(), &new).await {
            Ok(_) => RestoreItem::of(object, Fate::Created, None),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                RestoreItem::of(object, compare(&api, object).await?, None)
            }
            Err(e) => match api_error(e, &format!("create {}", what(object))) {
                WorkloadError::Transient(m) => return Err(WorkloadError::Transient(m)),
                other => RestoreItem::of(object, Fate::Failed, Some(other.to_string())),
            },
        };
        items.push(item);
    }
    progress(ordered.len(), ordered.len());
    Ok(items)
}
