//! `fleet images|versions|findings` (operators).

use serde_json::Value;

use crate::api::{query, Api};
use crate::args::{FleetArgs, FleetCommand};
use crate::config::ClientConfig;
use crate::error::Result;
use crate::output::{print_list, Column};

pub async fn run(cmd: FleetCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    let (path, filter, severity, columns): (&str, FleetArgs, Option<String>, &[Column]) = match cmd
    {
        FleetCommand::Images(f) => (
            "images",
            f,
            None,
            &[
                Column("image", "image"),
                Column("clusters", "clusters"),
                Column("first seen", "first_seen"),
            ],
        ),
        FleetCommand::Versions(f) => (
            "versions",
            f,
            None,
            &[
                Column("tenant", "tenant"),
                Column("cluster", "cluster"),
                Column("api server", "api_version"),
                Column("node", "node"),
                Column("kubelet", "kubelet_version"),
                Column("runtime", "container_runtime"),
                Column("ready", "ready"),
                Column("synced", "synced_at"),
            ],
        ),
        FleetCommand::Findings { filter, severity } => (
            "findings",
            filter,
            severity,
            &[
                Column("severity", "finding.severity"),
                Column("check", "finding.check"),
                Column("tenant", "tenant"),
                Column("cluster", "cluster"),
                Column("subject", "finding.subject"),
                Column("message", "finding.message"),
            ],
        ),
    };
    let answer: Value = api
        .get(&format!(
            "/api/v1/fleet/{path}{}",
            query(&[
                ("tenant", filter.tenant.as_deref()),
                ("cluster", filter.cluster.as_deref()),
                ("q", filter.q.as_deref()),
                ("severity", severity.as_deref()),
                ("limit", Some("500")),
            ])
        ))
        .await?;
    let total = answer.get("total").and_then(Value::as_u64).unwrap_or(0);
    let items = answer
        .get("items")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let shown = items.as_array().map_or(0, Vec::len) as u64;
    if total > shown {
        super::progress(&format!(
            "showing {shown} of {total}: narrow with --tenant, --cluster or --q"
        ));
    }
    print_list(filter.out.output, &items, columns)
}
