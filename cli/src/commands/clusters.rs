//! `clusters list|get|create|delete|scale|upgrade|replace-node` (and `autoscale`, in its own
//! file).

use std::collections::BTreeMap;
use std::time::Duration;

use kqueen_dto::clusters::{
    ClusterAccepted, ClusterDetail, ClusterList, ClusterState, Operation, Scale, Upgrade,
};
use serde::Serialize;

use super::{key_values, progress};
use crate::api::{query, segment, Api};
use crate::args::ClustersCommand;
use crate::config::ClientConfig;
use crate::error::{CliError, Result};
use crate::output::{print_line, print_list, print_object, Column, Format};
use crate::resolve;

const LIST_COLUMNS: &[Column] = &[
    Column("tenant", "tenant"),
    Column("name", "name"),
    Column("state", "state"),
    Column("template", "template"),
    Column("nodes", "node_count"),
    Column("endpoint", "endpoint"),
    Column("id", "id"),
];

const DETAIL_FIELDS: &[Column] = &[
    Column("id", "id"),
    Column("tenant", "tenant"),
    Column("name", "name"),
    Column("state", "state"),
    Column("template", "template"),
    Column("kind", "kind"),
    Column("nodes", "node_count"),
    Column("endpoint", "endpoint"),
    Column("error", "error"),
    Column("progress", "progress"),
    Column("step", "current_step"),
    Column("admin access", "admin_access"),
    Column("expires", "expires_at"),
    Column("created by", "created_by"),
    Column("created", "created_at"),
];

/// The request body of `POST /api/v1/clusters` (parameters as text: the API reads numbers
/// and booleans from text as the portal's form sends them).
#[derive(Debug, Serialize)]
struct ClusterRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
    name: String,
    template: String,
    parameters: BTreeMap<String, String>,
}

pub async fn run(cmd: ClustersCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    match cmd {
        ClustersCommand::List {
            tenant,
            state,
            name,
            out,
        } => {
            let list: ClusterList = api
                .get(&format!(
                    "/api/v1/clusters{}",
                    query(&[
                        ("tenant", tenant.as_deref()),
                        ("state", state.as_deref()),
                        ("name", name.as_deref()),
                        ("limit", Some("500")),
                    ])
                ))
                .await?;
            if list.total > list.items.len() as u64 {
                progress(&format!(
                    "showing {} of {} clusters: narrow with --tenant, --state or --name",
                    list.items.len(),
                    list.total
                ));
            }
            print_list(out.output, &list.items, LIST_COLUMNS)
        }
        ClustersCommand::Get { cluster, out } => {
            let found = resolve::cluster(&api, &cluster.cluster).await?;
            let detail = detail(&api, &found.id).await?;
            show_detail(out.output, &detail)
        }
        ClustersCommand::Create {
            name,
            template,
            tenant,
            params,
            wait,
            timeout,
            out,
        } => {
            let request = ClusterRequest {
                tenant,
                name,
                template,
                parameters: key_values(&params)?,
            };
            let accepted: ClusterAccepted = api.post("/api/v1/clusters", &request).await?;
            let c = &accepted.cluster;
            progress(&format!(
                "requested {}/{} ({}), operation {}",
                c.tenant, c.name, c.id, accepted.operation.id
            ));
            if wait {
                let done =
                    wait_until_settled(&api, &c.id, Duration::from_secs(timeout * 60)).await?;
                return show_detail(out.output, &done);
            }
            print_object(out.output, &accepted.cluster, DETAIL_FIELDS)
        }
        ClustersCommand::Delete { cluster, yes } => {
            let found = resolve::cluster(&api, &cluster.cluster).await?;
            if !yes {
                return Err(CliError::Usage(format!(
                    "deleting {}/{} cannot be undone: add --yes",
                    found.tenant, found.name
                )));
            }
            let op: Operation = api
                .delete(&format!("/api/v1/clusters/{}", segment(&found.id)))
                .await?;
            print_line(&format!(
                "deleting {}/{} (operation {})",
                found.tenant, found.name, op.id
            ))
        }
        ClustersCommand::Scale { cluster, nodes } => {
            let found = resolve::cluster(&api, &cluster.cluster).await?;
            let op: Operation = api
                .post(
                    &format!("/api/v1/clusters/{}/scale", segment(&found.id)),
                    &Scale { node_count: nodes },
                )
                .await?;
            print_line(&format!(
                "scaling {}/{} to {nodes} node(s) (operation {})",
                found.tenant, found.name, op.id
            ))
        }
        ClustersCommand::Upgrade { cluster, version } => {
            let found = resolve::cluster(&api, &cluster.cluster).await?;
            let op: Operation = api
                .post(
                    &format!("/api/v1/clusters/{}/upgrade", segment(&found.id)),
                    &Upgrade {
                        kubernetes_version: version.clone(),
                    },
                )
                .await?;
            print_line(&format!(
                "upgrading {}/{} to {version} (operation {})",
                found.tenant, found.name, op.id
            ))
        }
        ClustersCommand::Autoscale(args) => super::autoscaling::run(&api, args).await,
        ClustersCommand::ReplaceNode { cluster, node, out } => {
            let found = resolve::cluster(&api, &cluster.cluster).await?;
            let op: Operation = api
                .post(
                    &format!(
                        "/api/v1/clusters/{}/nodes/{}/replace",
                        segment(&found.id),
                        segment(&node)
                    ),
                    &serde_json::json!({}),
                )
                .await?;
            if out.output != Format::Table {
                return print_object(out.output, &op, &[]);
            }
            print_line(&format!(
                "replacing node {} of {}/{} (operation {})",
                op.target.as_deref().unwrap_or(node.trim()),
                found.tenant,
                found.name,
                op.id
            ))
        }
    }
}

async fn detail(api: &Api, id: &str) -> Result<ClusterDetail> {
    api.get(&format!("/api/v1/clusters/{}", segment(id))).await
}

fn show_detail(format: Format, detail: &ClusterDetail) -> Result<()> {
    if format != Format::Table {
        return print_object(format, detail, &[]);
    }
    let mut row = serde_json::to_value(&detail.cluster)
        .map_err(|e| CliError::local("cannot show the cluster", e))?;
    row["admin_access"] = serde_json::Value::String(detail.admin_access.clone());
    print_object(format, &row, DETAIL_FIELDS)
}

/// Polls the cluster until it is Ready (Ok) or failed (Err), printing each change of state,
/// progress or step on standard error; gives up after `timeout`.
async fn wait_until_settled(api: &Api, id: &str, timeout: Duration) -> Result<ClusterDetail> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let d = detail(api, id).await?;
        let c = &d.cluster;
        let line = format!(
            "{}{}{}",
            c.state.label(),
            c.progress.map(|p| format!(" {p}%")).unwrap_or_default(),
            c.current_step
                .as_deref()
                .map(|s| format!(": {s}"))
                .unwrap_or_default()
        );
        if line != last {
            progress(&line);
            last = line;
        }
        match c.state {
            ClusterState::Ready => return Ok(d),
            ClusterState::Error => {
                return Err(CliError::Refused(format!(
                    "provisioning {}/{} failed: {}",
                    c.tenant,
                    c.name,
                    c.error.as_deref().unwrap_or("no reason given")
                )))
            }
            _ => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::Local(format!(
                "{}/{} is still {} after {} minute(s); `kqueen clusters get {}` follows it",
                c.tenant,
                c.name,
                c.state.label(),
                timeout.as_secs() / 60,
                c.id
            )));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
