//! What the backups' pages receive besides the API's own types.

use kqueen_dto::backups::RestorePlan;

/// What the restore page shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RestorePageDto {
    pub cluster_id: String,
    pub cluster_name: String,
    pub backup: kqueen_dto::backups::Backup,
    /// Clusters the caller may restore into: `(id, "tenant/name")`, this one first.
    pub targets: Vec<(String, String)>,
    /// The plan for the chosen target and namespaces, once previewed.
    pub plan: Option<RestorePlan>,
    /// Why the plan could not be made.
    pub plan_error: Option<String>,
}
