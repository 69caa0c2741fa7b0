//! `approvals list|protect|request|approve|refuse`.

use kqueen_dto::approvals::{Approval, ApprovalRefusal, ApprovalRequest, ProductionMark};
use kqueen_dto::clusters::Cluster;

use crate::api::{segment, Api};
use crate::args::ApprovalsCommand;
use crate::config::ClientConfig;
use crate::error::{CliError, Result};
use crate::output::{print_line, print_list, Column};
use crate::resolve;

/// A request in one line: what became of it.
fn outcome(a: &Approval) -> String {
    let by = a.decided_by.as_deref().unwrap_or("nobody");
    let mut line = format!(
        "request {} to {} {}: {}",
        a.id, a.action, a.cluster, a.state
    );
    match a.state.as_str() {
        "pending" => line.push_str(&format!(
            " (a second operator or tenant admin approves it before {})",
            a.expires_at
        )),
        "approved" | "refused" | "failed" => line.push_str(&format!(" by {by}")),
        _ => {}
    }
    if let Some(op) = &a.operation {
        line.push_str(&format!(" (operation {op})"));
    }
    if let Some(note) = &a.note {
        line.push_str(&format!(": {note}"));
    }
    line
}

pub async fn run(cmd: ApprovalsCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    match cmd {
        ApprovalsCommand::List { all, out } => {
            let path = if all {
                "/api/v1/approvals"
            } else {
                "/api/v1/approvals?pending=true"
            };
            let list: Vec<Approval> = api.get(path).await?;
            print_list(
                out.output,
                &list,
                &[
                    Column("id", "id"),
                    Column("cluster", "cluster"),
                    Column("action", "action"),
                    Column("state", "state"),
                    Column("requested by", "requested_by"),
                    Column("reason", "reason"),
                    Column("expires", "expires_at"),
                ],
            )
        }
        ApprovalsCommand::Protect { cluster } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let marked: Cluster = api
                .put(
                    &format!("/api/v1/clusters/{}/production", segment(&c.id)),
                    &ProductionMark { production: true },
                )
                .await?;
            print_line(&format!(
                "{}/{} is production: deleting it, restoring over it and unmarking it need a \
                 second person's approval",
                marked.tenant, marked.name
            ))
        }
        ApprovalsCommand::Request {
            cluster,
            action,
            backup,
            namespaces,
            reason,
        } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let asked: Approval = api
                .post(
                    &format!("/api/v1/clusters/{}/approvals", segment(&c.id)),
                    &ApprovalRequest {
                        action,
                        backup,
                        namespaces,
                        reason,
                    },
                )
                .await?;
            print_line(&outcome(&asked))
        }
        ApprovalsCommand::Approve { id } => {
            let done: Approval = api
                .post(
                    &format!("/api/v1/approvals/{}/approve", segment(&id)),
                    &serde_json::json!({}),
                )
                .await?;
            // Approved, but its action could not run: said as the refusal it was.
            if done.state == "failed" {
                return Err(CliError::Refused(outcome(&done)));
            }
            print_line(&outcome(&done))
        }
        ApprovalsCommand::Refuse { id, reason } => {
            let done: Approval = api
                .post(
                    &format!("/api/v1/approvals/{}/refuse", segment(&id)),
                    &ApprovalRefusal { reason },
                )
                .await?;
            print_line(&outcome(&done))
        }
    }
}
