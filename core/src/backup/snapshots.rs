//! VolumeSnapshots on request: with a backup, a VolumeSnapshot of every claim it recorded,
//! where the cluster serves the snapshot API (`snapshot.storage.k8s.io`, at its preferred
//! version). The cluster's snapshot controller and CSI driver take the snapshot; the backup
//! records which VolumeSnapshot it asked for, of which claim, or why it could not.

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::VolumeRecord;
use crate::workloads::{api_error, WorkloadError};

/// The API group of VolumeSnapshots.
pub const SNAPSHOT_GROUP: &str = "snapshot.storage.k8s.io";

/// The label on every VolumeSnapshot a backup asked for: the backup's id.
pub const BACKUP_LABEL: &str = "kqueen.io/backup";

/// A VolumeSnapshot a backup asked for, or why it could not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    pub namespace: String,
    /// The claim snapshotted.
    pub claim: String,
    /// The VolumeSnapshot's name, in the claim's namespace.
    pub name: String,
    /// Created, or refused by the cluster (then `reason`).
    pub created: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What came of asking for snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshots {
    pub records: Vec<SnapshotRecord>,
    /// Why none was asked for (the cluster does not serve the snapshot API, no claim).
    pub note: Option<String>,
}

/// The name of the VolumeSnapshot of `claim` for backup `backup`: `kqueen-<12 hex>-<claim>`,
/// at most 253 characters, a DNS subdomain as the claim's name is.
pub fn snapshot_name(backup: Uuid, claim: &str) -> String {
    let hex = backup.simple().to_string();
    let suffix = &hex[hex.len() - 12..];
    let mut name = format!("kqueen-{suffix}-{claim}");
    name.truncate(253);
    name.trim_end_matches(['-', '.']).to_owned()
}

/// The VolumeSnapshot API the cluster serves (its preferred version), if any.
async fn snapshot_api(client: &kube::Client) -> Result<Option<ApiResource>, WorkloadError> {
    let groups = client
        .list_api_groups()
        .await
        .map_err(|e| api_error(e, "list the cluster's API groups"))?;
    let Some(group) = groups.groups.iter().find(|g| g.name == SNAPSHOT_GROUP) else {
        return Ok(None);
    };
    let Some(version) = group
        .preferred_version
        .as_ref()
        .or_else(|| group.versions.first())
        .map(|v| v.version.clone())
    else {
        return Ok(None);
    };
    Ok(Some(ApiResource {
        group: SNAPSHOT_GROUP.into(),
        version: version.clone(),
        api_version: format!("{SNAPSHOT_GROUP}/{version}"),
        kind: "VolumeSnapshot".into(),
        plural: "volumesnapshots".into(),
    }))
}

/// Asks the cluster for a VolumeSnapshot of every claim in `volumes` (the class left to the
/// cluster's default), labelled with the backup's id.
pub async fn snapshot_claims(
    client: &kube::Client,
    backup: Uuid,
    volumes: &[VolumeRecord],
) -> Result<Snapshots, WorkloadError> {
    let claims: Vec<(&str, &str)> = volumes
        .iter()
        .filter(|v| v.kind == "PersistentVolumeClaim")
        .filter_map(|v| Some((v.namespace.as_deref()?, v.name.as_str())))
        .collect();
    if claims.is_empty() {
        return Ok(Snapshots {
            records: Vec::new(),
            note: Some("The cluster holds no PersistentVolumeClaim: nothing to snapshot.".into()),
        });
    }
    let Some(resource) = snapshot_api(client).await? else {
        return Ok(Snapshots {
            records: Vec::new(),
            note: Some(format!(
                "The cluster does not serve the snapshot API ({SNAPSHOT_GROUP}): no \
                 VolumeSnapshot was created. Install the snapshot CRDs and controller with \
                 a CSI driver that supports snapshots, or use the storage system's own."
            )),
        });
    };
    let mut records = Vec::with_capacity(claims.len());
    for (namespace, claim) in claims {
        let name = snapshot_name(backup, claim);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": resource.api_version,
            "kind": "VolumeSnapshot",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": { BACKUP_LABEL: backup.to_string() },
            },
            "spec": { "source": { "persistentVolumeClaimName": claim } },
        }))
        .map_err(|e| WorkloadError::Refused(format!("a VolumeSnapshot of {claim}: {e}")))?;
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let reason = match api.create(&PostParams::default(), &object).await {
            Ok(_) => None,
            Err(kube::Error::Api(e)) => Some(e.message),
            Err(e) => return Err(api_error(e, "create a VolumeSnapshot")),
        };
        records.push(SnapshotRecord {
            namespace: namespace.to_owned(),
            claim: claim.to_owned(),
            name,
            created: reason.is_none(),
            reason,
        });
    }
    Ok(Snapshots {
        records,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_names_are_dns_subdomains_unique_per_backup() {
        let backup = Uuid::parse_str("0190f0a0-0000-7000-8000-00000000abcd").unwrap_or_default();
        assert_eq!(snapshot_name(backup, "data"), "kqueen-00000000abcd-data");
        let long = "a".repeat(260);
        let name = snapshot_name(backup, &long);
        assert_eq!(name.len(), 253);
        assert!(name.starts_with("kqueen-00000000abcd-aaa"));
        let dashed = format!("{}-b", "c".repeat(232));
        assert!(!snapshot_name(backup, &dashed).ends_with('-'));
        assert_ne!(
            snapshot_name(Uuid::now_v7(), "data"),
            snapshot_name(Uuid::now_v7(), "data")
        );
    }
}
