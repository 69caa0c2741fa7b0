//! The persistent volumes and claims a backup records: their data is not in the backup (it
//! lives in the storage system), so the backup says what there is and how to keep it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One PersistentVolume or PersistentVolumeClaim as a backup records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeRecord {
    /// `PersistentVolume` or `PersistentVolumeClaim`.
    pub kind: String,
    /// The claim's namespace (volumes have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Requested (claim) or provided (volume) capacity, as Kubernetes writes it (`10Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// The CSI driver serving the volume, when it is a CSI volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_driver: Option<String>,
    /// A claim's volume, or a volume's claim (`namespace/name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
}

/// What a backup says about volume data, whatever it holds.
pub const VOLUME_GUIDANCE: &str = "The objects of PersistentVolumes and PersistentVolumeClaims \
     are in this backup; the data on them is not. Snapshot each volume with its storage \
     system: where the cluster serves the snapshot API (snapshot.storage.k8s.io), KQueen \
     creates a VolumeSnapshot of every claim on request; otherwise use the storage \
     provider's own snapshots, or copy the data with a pod that mounts the claim.";

fn text(object: &Value, path: &[&str]) -> Option<String> {
    super::field(object, path).map(str::to_owned)
}

/// The record of `object` when it is a volume or a claim.
pub fn volume_record(kind: &str, object: &Value) -> Option<VolumeRecord> {
    let name = text(object, &["metadata", "name"])?;
    match kind {
        "PersistentVolumeClaim" => Some(VolumeRecord {
            kind: kind.into(),
            namespace: text(object, &["metadata", "namespace"]),
            name,
            storage_class: text(object, &["spec", "storageClassName"]),
            size: text(object, &["spec", "resources", "requests", "storage"]),
            csi_driver: None,
            bound_to: text(object, &["spec", "volumeName"]),
        }),
        "PersistentVolume" => {
            let claim = object.get("spec").and_then(|s| s.get("claimRef"));
            Some(VolumeRecord {
                kind: kind.into(),
                namespace: None,
                name,
                storage_class: text(object, &["spec", "storageClassName"]),
                size: text(object, &["spec", "capacity", "storage"]),
                csi_driver: text(object, &["spec", "csi", "driver"]),
                bound_to: claim.and_then(|c| {
                    Some(format!(
                        "{}/{}",
                        text(c, &["namespace"])?,
                        text(c, &["name"])?
                    ))
                }),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claims_and_volumes_are_recorded_with_class_size_and_driver() {
        let claim = json!({"metadata": {"name": "data", "namespace": "shop"},
            "spec": {"storageClassName": "fast", "volumeName": "pv-1",
                     "resources": {"requests": {"storage": "10Gi"}}}});
        assert_eq!(
            volume_record("PersistentVolumeClaim", &claim),
            Some(VolumeRecord {
                kind: "PersistentVolumeClaim".into(),
                namespace: Some("shop".into()),
                name: "data".into(),
                storage_class: Some("fast".into()),
                size: Some("10Gi".into()),
                csi_driver: None,
                bound_to: Some("pv-1".into()),
            })
        );
        let volume = json!({"metadata": {"name": "pv-1"},
            "spec": {"capacity": {"storage": "10Gi"}, "csi": {"driver": "ebs.csi.aws.com"},
                     "claimRef": {"namespace": "shop", "name": "data"}}});
        let record = volume_record("PersistentVolume", &volume).unwrap();
        assert_eq!(record.csi_driver.as_deref(), Some("ebs.csi.aws.com"));
        assert_eq!(record.bound_to.as_deref(), Some("shop/data"));
        assert_eq!(record.storage_class, None);
        assert_eq!(volume_record("ConfigMap", &claim), None);
    }
}
