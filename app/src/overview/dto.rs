//! What the overview server functions send to the browser: The overview page.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverviewDto {
    /// Installation-wide counts, for operators only.
    pub tenants: Option<u64>,
    pub users: Option<u64>,
    pub audit_events: Option<u64>,
    /// `sqlite` or `postgres`.
    pub database: String,
}
