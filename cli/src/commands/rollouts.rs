//! `rollouts plan|start|list|get|pause|resume|abort`.

use kqueen_dto::rollouts::{Rollout, RolloutDetail, RolloutPlan, RolloutRequest};
use serde_json::{json, Value};

use crate::api::{segment, Api};
use crate::args::{RolloutArg, RolloutArgs, RolloutsCommand};
use crate::config::ClientConfig;
use crate::error::{CliError, Result};
use crate::output::{print_line, print_list, print_object, print_value, table, Column, Format};
use crate::resolve::is_uuid;

const LIST_COLUMNS: &[Column] = &[
    Column("id", "id"),
    Column("tenant", "tenant"),
    Column("target", "target_version"),
    Column("state", "state"),
    Column("wave", "wave_of"),
    Column("done", "done"),
    Column("created by", "created_by"),
    Column("reason", "reason"),
];

const DETAIL_FIELDS: &[Column] = &[
    Column("id", "id"),
    Column("state", "state"),
    Column("target", "target_version"),
    Column("clusters", "filter"),
    Column("wave", "wave_of"),
    Column("progress", "done"),
    Column("reason", "reason"),
    Column("created by", "created_by"),
    Column("created", "created_at"),
    Column("updated", "updated_at"),
];

const CLUSTER_COLUMNS: &[Column] = &[
    Column("wave", "wave"),
    Column("tenant", "tenant"),
    Column("cluster", "cluster"),
    Column("from", "from_version"),
    Column("state", "state"),
    Column("operation", "operation"),
    Column("reason", "reason"),
];

const PLAN_COLUMNS: &[Column] = &[
    Column("wave", "wave"),
    Column("tenant", "tenant"),
    Column("cluster", "name"),
    Column("provider", "provider"),
    Column("version", "version"),
    Column("production", "production"),
];

const EXCLUDED_COLUMNS: &[Column] = &[
    Column("tenant", "cluster.tenant"),
    Column("cluster", "cluster.name"),
    Column("version", "cluster.version"),
    Column("reason", "reason"),
];

pub async fn run(cmd: RolloutsCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    match cmd {
        RolloutsCommand::Plan(args) => {
            let plan: RolloutPlan = api.post("/api/v1/rollouts/plan", &request(&args)).await?;
            show_plan(args.out.output, &plan)
        }
        RolloutsCommand::Start(args) => {
            let started: RolloutDetail = api.post("/api/v1/rollouts", &request(&args)).await?;
            show_detail(args.out.output, &started)
        }
        RolloutsCommand::List { out } => {
            let list: Vec<Rollout> = api.get("/api/v1/rollouts").await?;
            if out.output != Format::Table {
                return print_list(out.output, &list, &[]);
            }
            let rows: Vec<Value> = list.iter().map(summary_row).collect::<Result<_>>()?;
            print_list(out.output, &rows, LIST_COLUMNS)
        }
        RolloutsCommand::Get(arg) => {
            let id = rollout_id(&api, &arg.id).await?;
            let detail: RolloutDetail = api
                .get(&format!("/api/v1/rollouts/{}", segment(&id)))
                .await?;
            show_detail(arg.out.output, &detail)
        }
        RolloutsCommand::Pause(arg) => change(&api, arg, "pause").await,
        RolloutsCommand::Resume(arg) => change(&api, arg, "resume").await,
        RolloutsCommand::Abort(arg) => change(&api, arg, "abort").await,
    }
}

fn request(args: &RolloutArgs) -> RolloutRequest {
    RolloutRequest {
        tenant: args.tenant.clone(),
        provider: args.provider.clone(),
        version: args.version.clone(),
        target_version: args.target.clone(),
        wave_size: args.wave_size,
    }
}

/// Pause, resume or abort (`verb`), answered with a line saying where the rollout is now.
async fn change(api: &Api, arg: RolloutArg, verb: &str) -> Result<()> {
    let id = rollout_id(api, &arg.id).await?;
    let done: RolloutDetail = api
        .post(
            &format!("/api/v1/rollouts/{}/{verb}", segment(&id)),
            &json!({}),
        )
        .await?;
    if arg.out.output != Format::Table {
        return print_object(arg.out.output, &done, &[]);
    }
    let r = &done.rollout;
    let mut line = format!(
        "rollout {} (upgrade to {}): {}, wave {} of {}, {}% done",
        r.id,
        r.target_version,
        r.state.as_str(),
        r.wave,
        r.waves,
        r.progress.percent
    );
    if let Some(reason) = &r.reason {
        line.push_str(&format!(" ({reason})"));
    }
    print_line(&line)
}

/// The rollout `reference` names: a UUID as it is, or the unique rollout (of those listed)
/// whose id starts with it.
async fn rollout_id(api: &Api, reference: &str) -> Result<String> {
    let reference = reference.trim().to_ascii_lowercase();
    if is_uuid(&reference) {
        return Ok(reference);
    }
    if reference.is_empty() {
        return Err(CliError::Usage(
            "name a rollout: its UUID or the start of it".into(),
        ));
    }
    let list: Vec<Rollout> = api.get("/api/v1/rollouts").await?;
    let mut found: Vec<String> = list
        .into_iter()
        .map(|r| r.id)
        .filter(|id| id.starts_with(&reference))
        .collect();
    match found.len() {
        0 => Err(CliError::NotFound(format!(
            "no rollout {reference:?} that you manage"
        ))),
        1 => Ok(found.remove(0)),
        _ => Err(CliError::Usage(format!(
            "several rollouts start with {reference:?}: {}; give more of the id",
            found.join(", ")
        ))),
    }
}

/// A rollout as the tables show it: "2 of 3", "60% (3 upgraded, 1 failed, 1 waiting)".
fn summary_row(r: &Rollout) -> Result<Value> {
    let mut row = serde_json::to_value(r).map_err(|e| CliError::local("cannot show it", e))?;
    let p = &r.progress;
    let mut counts = Vec::new();
    for (n, what) in [
        (p.upgraded, "upgraded"),
        (p.upgrading, "upgrading"),
        (p.failed, "failed"),
        (p.skipped, "skipped"),
        (p.waiting, "waiting"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    let mut filter = vec![match &r.tenant {
        Some(t) => format!("tenant {t}"),
        None => "the fleet".to_owned(),
    }];
    if let Some(p) = &r.provider {
        filter.push(format!("provider {p}"));
    }
    if let Some(v) = &r.version {
        filter.push(format!("version {v}"));
    }
    row["tenant"] = json!(r.tenant.as_deref().unwrap_or("(fleet)"));
    row["wave_of"] = json!(format!(
        "{} of {} (waves of {})",
        r.wave, r.waves, r.wave_size
    ));
    row["done"] = json!(format!("{}% ({})", p.percent, counts.join(", ")));
    row["filter"] = json!(filter.join(", "));
    Ok(row)
}

fn show_detail(format: Format, detail: &RolloutDetail) -> Result<()> {
    if format != Format::Table {
        return print_object(format, detail, &[]);
    }
    print_object(format, &summary_row(&detail.rollout)?, DETAIL_FIELDS)?;
    let rows = serde_json::to_value(&detail.clusters)
        .map_err(|e| CliError::local("cannot show the clusters", e))?;
    let rows = rows.as_array().cloned().unwrap_or_default();
    print_line("")?;
    print_line(table(&rows, CLUSTER_COLUMNS).trim_end())
}

fn show_plan(format: Format, plan: &RolloutPlan) -> Result<()> {
    if format != Format::Table {
        let value = serde_json::to_value(plan).map_err(|e| CliError::local("cannot show it", e))?;
        return print_value(format, &value);
    }
    let waves = plan.waves.len();
    let mut rows = Vec::new();
    for (i, wave) in plan.waves.iter().enumerate() {
        for c in wave {
            let mut row =
                serde_json::to_value(c).map_err(|e| CliError::local("cannot show it", e))?;
            row["wave"] = json!(format!("{} of {waves}", i + 1));
            row["production"] = json!(if c.production { "yes" } else { "no" });
            rows.push(row);
        }
    }
    let planned = rows.len();
    let mut text = if planned == 0 {
        "no cluster would be upgraded\n".to_owned()
    } else {
        table(&rows, PLAN_COLUMNS)
    };
    if !plan.excluded.is_empty() {
        let left = serde_json::to_value(&plan.excluded)
            .map_err(|e| CliError::local("cannot show it", e))?;
        text.push_str(&format!("\nleft out ({}):\n", plan.excluded.len()));
        text.push_str(&table(
            &left.as_array().cloned().unwrap_or_default(),
            EXCLUDED_COLUMNS,
        ));
    }
    text.push_str(&format!(
        "\n{planned} cluster(s) in {waves} wave(s); {} left out\n",
        plan.excluded.len()
    ));
    print_line(text.trim_end())
}
