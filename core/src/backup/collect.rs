//! Reads what a cluster holds for a backup: every API group the cluster serves, each listable
//! resource at the group's preferred version, page by page; each object cleaned or left out
//! with its reason ([`super::clean`]). A group the cluster cannot describe now (an aggregated
//! API whose server is down) is recorded as left out, not a failure of the whole backup.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::ApiResource;
use kube::discovery::{self, verbs, ApiCapabilities, Scope};
use serde_json::Value;

use super::clean::{clean, left_out_object, left_out_resource};
use super::volumes::volume_record;
use super::{KindCount, LeftOut, VolumeRecord};
use crate::workloads::{api_error, WorkloadError};

/// Objects per list request.
const PAGE: u32 = 500;

/// What a backup read from a cluster.
#[derive(Debug, Default)]
pub struct Collected {
    /// Cleaned objects for the archive (no Secrets).
    pub objects: Vec<Value>,
    /// Cleaned Secrets (only when asked for).
    pub secrets: Vec<Value>,
    /// Secrets not backed up because they were not asked for.
    pub secrets_left_out: u32,
    pub kinds: Vec<KindCount>,
    pub left_out: Vec<LeftOut>,
    pub volumes: Vec<VolumeRecord>,
    pub namespaces: Vec<String>,
    /// The content's size as JSON, a measure of what the archive will weigh.
    pub bytes: usize,
}

/// What a backup reads, as it reads it: `(done, of, what)` resources.
pub type Progress<'a> = &'a (dyn Fn(usize, usize, &str) + Send + Sync);

/// Every API group the cluster serves (the core group first, named ""), each described or
/// with why it could not be.
pub(super) async fn api_groups(
    client: &kube::Client,
) -> Result<Vec<(String, Result<discovery::ApiGroup, kube::Error>)>, WorkloadError> {
    let groups = client
        .list_api_groups()
        .await
        .map_err(|e| api_error(e, "list the cluster's API groups"))?;
    let mut names = vec![String::new()];
    names.extend(groups.groups.into_iter().map(|g| g.name));
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let group = discovery::group(client, &name).await;
        out.push((name, group));
    }
    Ok(out)
}

/// The resources a backup lists, and the groups and resources it does not (with reasons).
async fn resources(
    client: &kube::Client,
    left_out: &mut BTreeMap<(String, String), u32>,
) -> Result<Vec<(ApiResource, ApiCapabilities)>, WorkloadError> {
    let mut found = Vec::new();
    for (name, group) in api_groups(client).await? {
        let group = match group {
            Ok(g) => g,
            Err(e) => {
                let what = if name.is_empty() { "core" } else { &name };
                let reason = api_error(e, &format!("describe API group {what}")).to_string();
                left_out.insert((format!("API group {what}"), reason), 0);
                continue;
            }
        };
        for (resource, caps) in group.recommended_resources() {
            if let Some(why) = left_out_resource(&resource.group, &resource.plural) {
                left_out.insert((what_of(&resource), why.to_owned()), 0);
                continue;
            }
            if !caps.supports_operation(verbs::LIST) {
                continue;
            }
            found.push((resource, caps));
        }
    }
    Ok(found)
}

/// `Kind`, or `Kind.group` outside the core group.
fn what_of(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.kind.clone()
    } else {
        format!("{}.{}", resource.kind, resource.group)
    }
}

/// Every object of `resource`, page by page.
async fn list_all(
    client: &kube::Client,
    resource: &ApiResource,
) -> Result<Vec<Value>, WorkloadError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let mut params = ListParams::default().limit(PAGE);
    let mut out = Vec::new();
    // Bounded: a cluster serving more than 10,000 pages of one resource is not backed up.
    for _ in 0..10_000 {
        let page = api
            .list(&params)
            .await
            .map_err(|e| api_error(e, &format!("list {}", resource.plural)))?;
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        for item in page.items {
            let value = serde_json::to_value(item)
                .map_err(|e| WorkloadError::Refused(format!("{}: {e}", resource.plural)))?;
            out.push(value);
        }
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
    Err(WorkloadError::Refused(format!(
        "{} has more than {} objects",
        resource.plural,
        10_000 * PAGE
    )))
}

/// Reads everything a backup holds from the cluster `client` reaches (see the module doc).
/// Secrets are read only when `include_secrets`; otherwise only counted.
pub async fn collect(
    client: &kube::Client,
    include_secrets: bool,
    progress: Progress<'_>,
) -> Result<Collected, WorkloadError> {
    let mut left_out: BTreeMap<(String, String), u32> = BTreeMap::new();
    let found = resources(client, &mut left_out).await?;
    let mut collected = Collected::default();
    let mut kinds: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut namespaces = BTreeSet::new();
    for (i, (resource, caps)) in found.iter().enumerate() {
        progress(i, found.len(), &what_of(resource));
        let is_secret = resource.group.is_empty() && resource.plural == "secrets";
        let objects = list_all(client, resource).await?;
        for object in objects {
            if let Some(record) = volume_record(&resource.kind, &object) {
                collected.volumes.push(record);
            }
            if let Some(reason) = left_out_object(&resource.kind, &object) {
                *left_out.entry((what_of(resource), reason)).or_default() += 1;
                continue;
            }
            if is_secret && !include_secrets {
                collected.secrets_left_out += 1;
                continue;
            }
            if caps.scope == Scope::Namespaced {
                if let Some(ns) = object
                    .get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                {
                    namespaces.insert(ns.to_owned());
                }
            }
            let cleaned = clean(&resource.api_version, &resource.kind, object);
            collected.bytes += cleaned.to_string().len();
            if collected.bytes > super::archive::MAX_CONTENT_BYTES {
                return Err(WorkloadError::Refused(
                    super::archive::ArchiveError::TooLarge.to_string(),
                ));
            }
            if is_secret {
                collected.secrets.push(cleaned);
            } else {
                *kinds
                    .entry((resource.group.clone(), resource.kind.clone()))
                    .or_default() += 1;
                collected.objects.push(cleaned);
            }
        }
    }
    progress(found.len(), found.len(), "done");
    collected.kinds = kinds
        .into_iter()
        .map(|((group, kind), count)| KindCount { group, kind, count })
        .collect();
    collected.left_out = left_out
        .into_iter()
        .map(|((what, reason), count)| LeftOut {
            what,
            reason,
            count,
        })
        .collect();
    collected.namespaces = namespaces.into_iter().collect();
    Ok(collected)
}
