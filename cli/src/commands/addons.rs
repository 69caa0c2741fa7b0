//! `addons list|enable|disable`.

use kqueen_dto::addons::{AddonDefinition, AddonInstall, ClusterAddon};
use kqueen_dto::clusters::Operation;

use super::key_values;
use crate::api::{segment, Api};
use crate::args::AddonsCommand;
use crate::config::ClientConfig;
use crate::error::Result;
use crate::output::{print_line, print_list, Column};
use crate::resolve;

pub async fn run(cmd: AddonsCommand) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    match cmd {
        AddonsCommand::List { cluster: None, out } => {
            let catalog: Vec<AddonDefinition> = api.get("/api/v1/addons").await?;
            print_list(
                out.output,
                &catalog,
                &[
                    Column("name", "name"),
                    Column("version", "version"),
                    Column("namespace", "namespace"),
                    Column("requires", "requires"),
                    Column("description", "description"),
                ],
            )
        }
        AddonsCommand::List {
            cluster: Some(cluster),
            out,
        } => {
            let c = resolve::cluster(&api, &cluster).await?;
            let addons: Vec<ClusterAddon> = api
                .get(&format!("/api/v1/clusters/{}/addons", segment(&c.id)))
                .await?;
            print_list(
                out.output,
                &addons,
                &[
                    Column("name", "name"),
                    Column("state", "state_label"),
                    Column("version", "version"),
                    Column("upgrade", "upgrade_available"),
                    Column("reason", "reason"),
                ],
            )
        }
        AddonsCommand::Enable {
            cluster,
            addon,
            version,
            params,
        } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let install = AddonInstall {
                version,
                parameters: key_values(&params)?,
            };
            let op: Operation = api
                .put(
                    &format!(
                        "/api/v1/clusters/{}/addons/{}",
                        segment(&c.id),
                        segment(&addon)
                    ),
                    &install,
                )
                .await?;
            print_line(&format!(
                "installing {addon} on {}/{} (operation {})",
                c.tenant, c.name, op.id
            ))
        }
        AddonsCommand::Disable { cluster, addon } => {
            let c = resolve::cluster(&api, &cluster.cluster).await?;
            let op: Operation = api
                .delete(&format!(
                    "/api/v1/clusters/{}/addons/{}",
                    segment(&c.id),
                    segment(&addon)
                ))
                .await?;
            print_line(&format!(
                "removing {addon} from {}/{} (operation {})",
                c.tenant, c.name, op.id
            ))
        }
    }
}
