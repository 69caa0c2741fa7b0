//! Applications: versions deployed into a cluster, what a deploy would change, and how their
//! workloads are doing.

use serde::{Deserialize, Serialize};

/// A deploy (or a dry run of one).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeployRequest {
    /// Application name: a DNS-1123 label of at most 40 characters (`shop`).
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^[a-z]([-a-z0-9]*[a-z0-9])?$",
            min_length = 1,
            max_length = 40
        )
    )]
    pub name: String,
    /// Version: 1–40 letters, digits, `.`, `_` or `-` (`1.4.2`), starting and ending with a
    /// letter or digit.
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$",
            min_length = 1,
            max_length = 40
        )
    )]
    pub version: String,
    /// The namespace of this version; empty or absent: `<name>-<version>` (dots become
    /// dashes).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Multi-document YAML (at most 1 MiB, 500 objects). Namespaced objects go into the
    /// version's namespace; cluster-scoped ones only for operators and tenant admins of
    /// clusters whose template gives them cluster-admin.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
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

/// One version of an application in a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Application {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    pub name: String,
    pub version: String,
    pub namespace: String,
    /// `deploying`, `deployed`, `failed` or `deleting`.
    pub state: String,
    /// Why the last deploy or delete failed.
    pub error: Option<String>,
    /// What its last deploy applied (`Deployment shop-1-0/web`).
    pub objects: Vec<String>,
    pub requested_by: String,
    /// RFC 3339 (UTC).
    pub created_at: String,
    pub deployed_at: Option<String>,
}

/// A field a deploy changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldChange {
    /// `spec.replicas`, `spec.template.spec.containers[0].image`.
    pub path: String,
    /// Absent: the field is new.
    pub before: Option<String>,
    /// Absent: the field goes away.
    pub after: Option<String>,
}

/// What a deploy does to one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ObjectDiff {
    /// `Deployment`.
    pub kind: String,
    /// `apps/v1`.
    pub api_version: String,
    pub namespace: Option<String>,
    pub name: String,
    /// `created`, `changed`, `unchanged` or `pruned`.
    pub change: String,
    /// The changed fields (`changed` only).
    pub fields: Vec<FieldChange>,
}

/// The server-side dry run of a deploy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeployPreview {
    pub name: String,
    pub version: String,
    pub namespace: String,
    /// False: the deploy makes the namespace; the server checks the objects then.
    pub namespace_exists: bool,
    /// Whose rights the deploy uses in the cluster.
    pub applied_as: String,
    pub objects: Vec<ObjectDiff>,
}

/// A Deployment, StatefulSet or DaemonSet of a version and its rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Workload {
    pub kind: String,
    pub name: String,
    pub desired: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    /// `available`, `progressing` or `failed`.
    pub rollout: String,
    pub reason: Option<String>,
}

/// A pod that does not run well.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailingPod {
    pub name: String,
    /// `ImagePullBackOff: …`, `CrashLoopBackOff: …`.
    pub reason: String,
}

/// A warning event of the version's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Warning {
    pub object: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
}

/// A version with the live state of its workloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApplicationStatus {
    pub application: Application,
    pub workloads: Vec<Workload>,
    pub failing_pods: Vec<FailingPod>,
    pub warnings: Vec<Warning>,
    /// Set when the cluster could not be asked (then the lists are empty).
    pub unreachable: Option<String>,
}
