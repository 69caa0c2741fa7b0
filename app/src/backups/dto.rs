//! What the backups' pages receive besides the API's own types.

use kqueen_dto::backups::RestorePlan;

/// What the restore page shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RestorePageDto {
    /// The backup's cluster, while it lives.
    pub cluster_id: Option<String>,
    /// Its name (as the backup recorded it once the cluster is gone).
    pub cluster_name: String,
    pub backup: kqueen_dto::backups::Backup,
    /// Clusters the caller may restore into: `(id, "tenant/name")`, the backup's own first.
    pub targets: Vec<(String, String)>,
    /// The plan for the chosen target and namespaces, once previewed.
    pub plan: Option<RestorePlan>,
    /// Why the plan could not be made.
    pub plan_error: Option<String>,
    /// The plan's cluster is production: the restore is asked for, and runs once a second
    /// person approves.
    pub target_production: bool,
}
