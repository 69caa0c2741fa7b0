//! What the applications' server functions send to the browser.

use kqueen_dto::apps::{Application, ApplicationStatus, DeployPreview};
use kqueen_dto::clusters::Operation;
use serde::{Deserialize, Serialize};

/// The cluster page's applications section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterAppsDto {
    /// Every version deployed in the cluster (name, then version).
    pub versions: Vec<Application>,
}

/// The deploy form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAppPageDto {
    pub cluster_id: String,
    pub cluster_name: String,
    /// Applications are deployed into Ready clusters only.
    pub ready: bool,
    pub can_deploy: bool,
    /// The form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

/// The dry run of the request the caller previewed last in this cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewPageDto {
    pub cluster_id: String,
    pub cluster_name: String,
    /// None: nothing previewed (or the session ended); the page leads back to the form.
    pub preview: Option<DeployPreview>,
}

/// A version's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppPageDto {
    pub cluster_id: String,
    pub cluster_name: String,
    pub status: ApplicationStatus,
    /// The latest operation on this version (deploy or removal).
    pub operation: Option<Operation>,
    /// True while it is being deployed or removed (the page refreshes itself).
    pub busy: bool,
    pub can_manage: bool,
}
