//! What KQueen recorded of an addon it manages in a cluster.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::cluster::string_enum;
use crate::workloads::refs::ObjectRef;

string_enum!(
    /// Where KQueen's management of an addon in a cluster is (health and drift are asked of
    /// the cluster, see [`super::state`]).
    InstallState {
        Installing = "installing",
        Installed = "installed",
        Failed = "failed",
        Removing = "removing",
    }
);

/// An addon KQueen installed (or is installing, or failed to) in one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledAddon {
    pub cluster_id: Uuid,
    pub name: String,
    /// The catalog version applied (or being applied).
    pub version: String,
    /// The parameters, checked and completed with defaults.
    pub parameters: BTreeMap<String, String>,
    pub state: InstallState,
    pub error: Option<String>,
    /// What its last apply applied (removed by a removal, pruned by an upgrade).
    pub objects: Vec<ObjectRef>,
    pub requested_by: String,
    pub updated_at: DateTime<Utc>,
    pub installed_at: Option<DateTime<Utc>>,
}

/// How an addon operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddonOutcome<'a> {
    /// Installed or upgraded: what the set holds now.
    Applied(&'a [ObjectRef]),
    /// Removed: KQueen forgets it.
    Removed,
    Failed(&'a str),
}

/// An installed addon with the cluster and tenant it runs in (the fleet's view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetAddon {
    pub addon: InstalledAddon,
    pub tenant_id: Uuid,
    pub cluster_name: String,
    pub tenant_slug: String,
}
