//! What the addons' server functions send to the browser.

use kqueen_dto::addons::{AddonDefinition, BulkResult, ClusterAddon, FleetAddon};
use serde::{Deserialize, Serialize};

use crate::kept::KeptForm;

/// The cluster page's addons section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterAddonsDto {
    /// Every addon of the catalog, by name, with its state in the cluster.
    pub addons: Vec<ClusterAddon>,
    /// A refused install form (`addon-<name>-form`), with the error at its field.
    pub kept: Option<KeptForm>,
}

impl ClusterAddonsDto {
    /// An install or removal is queued or running: the section asks again soon.
    pub fn operation_pending(&self) -> bool {
        self.addons
            .iter()
            .any(|a| matches!(a.state.as_str(), "installing" | "removing") && a.reason.is_none())
    }

    /// Installed and waiting for its workloads: the section asks again, less often.
    pub fn starting(&self) -> bool {
        self.addons
            .iter()
            .any(|a| a.state == "installing" && a.reason.is_some())
    }
}

/// How many clusters run one version of one addon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionCount {
    pub addon: String,
    pub version: String,
    pub clusters: u64,
}

/// `/fleet/addons`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetAddonsDto {
    /// Addon, version, tenant, cluster.
    pub rows: Vec<FleetAddon>,
    pub counts: Vec<VersionCount>,
    /// Clusters per addon version, as an SVG bar chart.
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub chart: String,
    /// Operators may upgrade many clusters at once.
    pub can_bulk: bool,
    /// Addon names of the catalog (the bulk form's choice).
    pub addons: Vec<String>,
    /// The addon chosen for the bulk form (`?addon=`), its versions newest first.
    pub chosen: Option<String>,
    pub versions: Vec<String>,
    /// What the last bulk upgrade did (once, after it), and for which addon and version.
    pub results: Option<BulkOutcomeDto>,
    pub kept: Option<KeptForm>,
}

/// A bulk upgrade's outcome: one result per cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkOutcomeDto {
    pub addon: String,
    pub version: String,
    pub results: Vec<BulkResult>,
}

/// `/addons`: the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogDto {
    /// Every version, built-in ones included, by name and newest first (no manifests).
    pub definitions: Vec<AddonDefinition>,
    /// Operators add and delete versions.
    pub can_manage: bool,
    pub kept: Option<KeptForm>,
}
