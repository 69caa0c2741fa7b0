//! Upgrades in waves (rollouts): what is asked for, the plan, and a rollout with its clusters.
//! Waves are numbered from 1, as people count them ("wave 2 of 3"), here as in the reasons
//! and timelines the server writes. Filled from the core's types in kqueen-core's
//! `dto/rollouts.rs`.

use serde::{Deserialize, Serialize};

use crate::clusters::ClusterState;

/// A rollout asked for, or its plan: a target version, the clusters it takes (every filter
/// that is set must match) and the wave size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RolloutIn))]
pub struct RolloutRequest {
    /// Only this tenant's clusters (its slug). Tenant admins name theirs; left out or empty:
    /// the whole fleet (operators only).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "team-a"))]
    pub tenant: Option<String>,
    /// Only the clusters of this provider (its name).
    #[serde(default)]
    pub provider: Option<String>,
    /// Only the clusters at this version: `1.20` takes every 1.20.x. Empty: any.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^([vV]?[0-9]+(\\.[0-9]+)*([-+][A-Za-z0-9.+-]*)?)?$",
            max_length = 20,
            example = "1.20"
        )
    )]
    pub version: Option<String>,
    /// The version to bring the clusters to, such as `1.21` or `v1.21.3`.
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^[vV]?[0-9]+(\\.[0-9]+)*([-+][A-Za-z0-9.+-]*)?$",
            max_length = 20,
            example = "1.21"
        )
    )]
    pub target_version: String,
    /// Clusters upgraded at a time.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100, example = 2))]
    pub wave_size: u32,
}

/// A cluster as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutCandidate {
    /// The cluster (UUID).
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    pub name: String,
    /// The tenant's slug.
    pub tenant: String,
    /// The provider's name.
    pub provider: String,
    /// The version it runs, as KQueen knows it (None: not known).
    pub version: Option<String>,
    pub state: ClusterState,
    /// Production clusters come last.
    pub production: bool,
}

/// A cluster the filter took that the rollout leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutExcluded {
    pub cluster: RolloutCandidate,
    /// Why: its provider cannot upgrade, its template fixes or does not offer the version,
    /// it runs the target (or newer) already, it is not Ready, or another open rollout holds
    /// it.
    pub reason: String,
}

/// What a rollout would do (nothing is started).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutPlan {
    /// The waves in order, each the clusters it upgrades together: production clusters
    /// last, the others by tenant and name.
    pub waves: Vec<Vec<RolloutCandidate>>,
    /// By tenant and name.
    pub excluded: Vec<RolloutExcluded>,
}

/// Where a rollout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RolloutState {
    /// Upgrading wave after wave.
    Running,
    /// Stopped at a failure or by someone: upgrades under way finish, no new one starts
    /// until it is resumed.
    Paused,
    /// Every wave ended.
    Completed,
    /// Stopped for good: the clusters that were still waiting are skipped.
    Aborted,
}

impl RolloutState {
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutState::Running => "running",
            RolloutState::Paused => "paused",
            RolloutState::Completed => "completed",
            RolloutState::Aborted => "aborted",
        }
    }
}

/// Where one cluster of a rollout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RolloutClusterState {
    /// Its wave has not started, or it waits for an operation under way on it.
    Waiting,
    /// Its upgrade runs (`operation`).
    Upgrading,
    /// Upgraded and Ready.
    Upgraded,
    /// Its upgrade failed or could not be queued (`reason`).
    Failed,
    /// Left alone: deleted, at the version already, or the rollout was aborted.
    Skipped,
}

impl RolloutClusterState {
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutClusterState::Waiting => "waiting",
            RolloutClusterState::Upgrading => "upgrading",
            RolloutClusterState::Upgraded => "upgraded",
            RolloutClusterState::Failed => "failed",
            RolloutClusterState::Skipped => "skipped",
        }
    }
}

/// How many clusters of a rollout are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutProgress {
    pub waiting: u32,
    pub upgrading: u32,
    pub upgraded: u32,
    pub failed: u32,
    pub skipped: u32,
    pub total: u32,
    /// Percent of the clusters whose part has ended (upgraded, failed or skipped).
    #[cfg_attr(feature = "openapi", schema(maximum = 100))]
    pub percent: u8,
}

/// A rollout: a target version brought to the clusters of a filter, wave after wave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rollout {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    /// The filter it was started with: the tenant's slug (None: across the fleet), the
    /// provider's name, the clusters' version.
    pub tenant: Option<String>,
    pub provider: Option<String>,
    pub version: Option<String>,
    pub target_version: String,
    pub wave_size: u32,
    pub state: RolloutState,
    /// The wave under way, from 1 ("wave `wave` of `waves`"); once completed, the last.
    pub wave: u32,
    pub waves: u32,
    /// Why it is paused or aborted, or how it ended ("5 upgraded, 1 failed").
    pub reason: Option<String>,
    pub created_by: String,
    /// RFC 3339, UTC (like every time below).
    pub created_at: String,
    pub updated_at: String,
    pub progress: RolloutProgress,
}

/// One cluster of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutCluster {
    /// The cluster (UUID) and its name when planned.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub cluster_id: String,
    pub cluster: String,
    /// The tenant's slug.
    pub tenant: String,
    /// Its wave, from 1.
    pub wave: u32,
    /// The version it ran when planned.
    pub from_version: String,
    pub state: RolloutClusterState,
    /// Its upgrade operation (UUID), once queued.
    pub operation: Option<String>,
    /// Why it failed, was skipped, or waits.
    pub reason: Option<String>,
    pub updated_at: String,
}

/// A rollout with its clusters, by wave and place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RolloutDetail {
    #[serde(flatten)]
    pub rollout: Rollout,
    pub clusters: Vec<RolloutCluster>,
}
