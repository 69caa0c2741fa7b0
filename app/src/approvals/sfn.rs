//! The approvals' reads.

use leptos::prelude::*;

use super::dto::ApprovalsDto;
use crate::AppError;

/// `approvals` as rows, each with whether `actor` may decide it.
#[cfg(feature = "ssr")]
fn rows(
    actor: &kqueen_core::Actor,
    approvals: Vec<kqueen_core::approval::Approval>,
) -> Vec<super::dto::ApprovalRow> {
    use kqueen_core::policy::{check, Permission};

    approvals
        .into_iter()
        .map(|a| super::dto::ApprovalRow {
            can_decide: actor.identity().is_some()
                && check(actor, Permission::ApproveChanges(a.tenant_id)).is_ok(),
            approval: a.into(),
        })
        .collect()
}

/// Requests waiting for a decision in the caller's tenants (operators: every tenant),
/// newest first.
#[server(prefix = "/sfn", endpoint = "pending_approvals")]
pub async fn pending_approvals() -> Result<ApprovalsDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let list = k.approvals().list(&actor, true).await?;
    Ok(ApprovalsDto {
        rows: rows(&actor, list),
        can_mark: false,
        me: actor.to_string(),
    })
}

/// A cluster's requests, for its page (server side, with the page's other reads).
#[cfg(feature = "ssr")]
pub async fn cluster_approvals(
    k: &kqueen_core::Kqueen,
    actor: &kqueen_core::Actor,
    cluster: &kqueen_core::cluster::Cluster,
) -> Result<ApprovalsDto, kqueen_core::Error> {
    use kqueen_core::policy::{check, Permission};

    let list = k
        .approvals()
        .of_cluster(actor, &cluster.id.to_string())
        .await?;
    Ok(ApprovalsDto {
        rows: rows(actor, list),
        can_mark: check(actor, Permission::ApproveChanges(cluster.tenant_id)).is_ok(),
        me: actor.to_string(),
    })
}
