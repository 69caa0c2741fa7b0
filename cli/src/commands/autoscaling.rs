//! `clusters autoscale`: shows a cluster's autoscaling, turns it on or changes it, or turns
//! it off.

use kqueen_dto::autoscaling::{Autoscaling, AutoscalingInput};

use crate::api::{segment, Api};
use crate::args::AutoscaleArgs;
use crate::error::{CliError, Result};
use crate::output::{print_line, print_object, Column, Format};
use crate::resolve;

const FIELDS: &[Column] = &[
    Column("cluster", "cluster"),
    Column("nodes", "node_count"),
    Column("autoscaling", "autoscaling"),
    Column("last decision", "last_decision"),
    Column("last turn", "last_turn_at"),
];

pub async fn run(api: &Api, args: AutoscaleArgs) -> Result<()> {
    let found = resolve::cluster(api, &args.cluster.cluster).await?;
    let path = format!("/api/v1/clusters/{}/autoscaling", segment(&found.id));
    let changes = args.min.is_some()
        || args.max.is_some()
        || args.utilisation.is_some()
        || args.after.is_some();
    if args.off {
        if changes {
            return Err(CliError::Usage(
                "--off turns autoscaling off: leave out --min, --max, --utilisation and --after"
                    .into(),
            ));
        }
        api.delete::<()>(&path).await?;
        return print_line(&format!(
            "autoscaling of {}/{} is off; its node count stays as it is",
            found.tenant, found.name
        ));
    }
    let shown: Autoscaling = if changes {
        let (Some(min_nodes), Some(max_nodes)) = (args.min, args.max) else {
            return Err(CliError::Usage(
                "turning autoscaling on or changing it takes both --min and --max".into(),
            ));
        };
        let input = AutoscalingInput {
            min_nodes,
            max_nodes,
            scale_down_utilisation: args.utilisation,
            scale_down_after_secs: args.after,
        };
        api.put(&path, &input).await?
    } else {
        api.get(&path).await?
    };
    show(args.out.output, &shown)
}

fn show(format: Format, a: &Autoscaling) -> Result<()> {
    if format != Format::Table {
        return print_object(format, a, &[]);
    }
    let mut row = serde_json::to_value(a)
        .map_err(|e| CliError::Local(format!("cannot show the autoscaling: {e}")))?;
    row["autoscaling"] = serde_json::Value::String(match &a.settings {
        Some(s) => format!(
            "{}–{} nodes; a node under {}% used for {} s is removed",
            s.min_nodes, s.max_nodes, s.scale_down_utilisation, s.scale_down_after_secs
        ),
        None if a.can_scale => "off".to_owned(),
        None => "off (the provider cannot scale)".to_owned(),
    });
    print_object(Format::Table, &row, FIELDS)
}
