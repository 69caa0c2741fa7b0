//! Addons: the catalog operators define, their state in each cluster, and the fleet's view.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A typed parameter of an addon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddonParam {
    pub name: String,
    /// `string`, `integer`, `boolean` or `enum`.
    #[serde(rename = "type")]
    pub kind: String,
    pub default: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    /// An anchored regular expression (strings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The allowed values (enums).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// A workload (or object) an addon names: for its health rule, or to detect an install
/// KQueen did not make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WellKnown {
    /// `Deployment`, `DaemonSet` or `StatefulSet`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// When an addon is healthy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HealthRule {
    /// Workloads that must be available.
    #[serde(default)]
    pub workloads: Vec<WellKnown>,
    /// APIServices that must be Available (`v1beta1.metrics.k8s.io`).
    #[serde(default)]
    pub api_services: Vec<String>,
}

/// One version of an addon in the catalog. `manifests` is left out of listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddonDefinition {
    /// 1 to 50 lowercase letters, digits and `-`, not starting or ending with `-`.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^[a-z0-9]+(-+[a-z0-9]+)*$", min_length = 1, max_length = 50)
    )]
    pub name: String,
    /// 1 to 40 letters, digits, `.`, `_` or `-`, starting and ending with a letter or digit.
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$",
            min_length = 1,
            max_length = 40
        )
    )]
    pub version: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 500))]
    pub description: String,
    /// Where its namespaced objects go unless they name a namespace (a DNS-1123 label).
    #[cfg_attr(feature = "openapi", schema(format = "dns-label", max_length = 63))]
    pub namespace: String,
    #[serde(default)]
    pub parameters: Vec<AddonParam>,
    #[serde(default)]
    pub health: HealthRule,
    /// Addons that must be installed first.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Objects whose presence without KQueen's labels means someone else installed it.
    #[serde(default)]
    pub detect: Vec<WellKnown>,
    /// Multi-document YAML with `${parameter}` placeholders: at least one object. Empty in
    /// the catalog's list (`GET /api/v1/addons`: read one version for them), so the schema
    /// cannot require it; a definition without objects is refused with 400.
    #[serde(default)]
    pub manifests: String,
    /// Shipped with KQueen (cannot be removed).
    #[serde(default)]
    pub builtin: bool,
}

/// An addon in one cluster: its state and what the catalog offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterAddon {
    pub name: String,
    pub description: String,
    /// `not_installed`, `installing`, `healthy`, `degraded`, `drifted`, `removing`,
    /// `failed`, `present_unmanaged` or `unknown`.
    pub state: String,
    /// The state in words (`Present, unmanaged`).
    pub state_label: String,
    /// Why it is degraded, drifted, failed or unknown.
    pub reason: Option<String>,
    /// The version KQueen installed.
    pub version: Option<String>,
    /// The parameters it was installed with.
    pub parameters: BTreeMap<String, String>,
    /// The catalog's versions, newest first.
    pub versions: Vec<String>,
    /// A newer catalog version than the installed one.
    pub upgrade_available: Option<String>,
    /// The newest version's parameters (for the install form).
    pub parameter_specs: Vec<AddonParam>,
    pub requires: Vec<String>,
}

/// Install, upgrade or change an addon in a cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddonInstall {
    /// The catalog version; absent: the newest (on install) or the installed one.
    #[serde(default)]
    pub version: Option<String>,
    /// Parameter values as text; absent ones keep their default (or, on an installed addon,
    /// their current value).
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
}

/// An addon KQueen manages in one cluster of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FleetAddon {
    /// The cluster's UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub addon: String,
    pub version: String,
    /// `installing`, `installed`, `failed` or `removing` (as last recorded; a cluster's page
    /// asks the cluster for health and drift).
    pub state: String,
    pub error: Option<String>,
    pub upgrade_available: Option<String>,
}

/// Upgrade one addon on many clusters at once (operators).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkUpgrade {
    pub addon: String,
    /// The catalog version to move to.
    pub version: String,
    /// Cluster UUIDs; empty: every cluster that runs an older version.
    #[serde(default)]
    pub clusters: Vec<String>,
}

/// What a bulk upgrade did on one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkResult {
    pub cluster_id: String,
    pub cluster: String,
    /// The queued operation's UUID.
    pub operation: Option<String>,
    /// Why it was not queued.
    pub error: Option<String>,
}
