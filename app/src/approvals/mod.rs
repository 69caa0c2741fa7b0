//! Production clusters and the two-person rule in the portal: the cluster page's
//! "Production and approvals" section (mark a cluster production, the requests with
//! approve, refuse and withdraw), the request forms of a delete and of taking the mark off
//! (the cluster page's confirmation steps), and the "Approvals" page listing the requests
//! waiting in the caller's tenants.

pub mod actions;
pub mod dto;
mod page;
pub mod section;
pub mod sfn;

pub use page::PendingApprovals;
pub use section::{ApprovalWrites, ClusterApprovals};

/// A request's action in words.
pub fn action_label(action: &str) -> &'static str {
    match action {
        "delete" => "Delete the cluster",
        "restore" => "Restore a backup over it",
        "unprotect" => "Take the production mark off",
        _ => "Unknown action",
    }
}
