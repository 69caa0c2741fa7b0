//! `apps list|deploy|delete`.

use std::io::Read;

use kqueen_dto::apps::{Application, DeployRequest};
use kqueen_dto::clusters::Operation;
use serde_json::Value;

use crate::api::{segment, Api};
use crate::args::AppsCommand;
use crate::config::ClientConfig;
use crate::error::{CliError, Result};
use crate::output::{print_line, print_list, print_object, Column};
use crate::resolve::{self, is_uuid};

const COLUMNS: &[Column] = &[
    Column("name", "name"),
    Column("version", "version"),
    Column("namespace", "namespace"),
    Column("state", "state"),
    Column("deployed", "deployed_at"),
    Column("error", "error"),
    Column("id", "id"),
];

pub async fn run(cmd: AppsCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    match cmd {
        AppsCommand::List { cluster, out } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let apps = list(&api, &c.id).await?;
            print_list(out.output, &apps, COLUMNS)
        }
        AppsCommand::Deploy {
            cluster,
            name,
            version,
            namespace,
            file,
            out,
        } => {
            let manifests = if file.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| CliError::local("cannot read standard input", e))?;
                text
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| CliError::local(&format!("cannot read {}", file.display()), e))?
            };
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let request = DeployRequest {
                name,
                version,
                namespace,
                manifests,
            };
            let accepted: Value = api
                .post(
                    &format!("/api/v1/clusters/{}/apps", segment(&c.id)),
                    &request,
                )
                .await?;
            print_object(out.output, &accepted["application"], COLUMNS)
        }
        AppsCommand::Delete { cluster, app } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let id = if is_uuid(&app) {
                app.clone()
            } else {
                let apps = list(&api, &c.id).await?;
                let found = apps.iter().rev().find(|a| a.name == app).ok_or_else(|| {
                    CliError::NotFound(format!("no application {app:?} on {}/{}", c.tenant, c.name))
                })?;
                found.id.clone()
            };
            let op: Operation = api
                .delete(&format!(
                    "/api/v1/clusters/{}/apps/{}",
                    segment(&c.id),
                    segment(&id)
                ))
                .await?;
            print_line(&format!(
                "removing {app} from {}/{} (operation {})",
                c.tenant, c.name, op.id
            ))
        }
    }
}

async fn list(api: &Api, cluster: &str) -> Result<Vec<Application>> {
    api.get(&format!("/api/v1/clusters/{}/apps", segment(cluster)))
        .await
}
