//! `kubeconfig` (a context in your kubeconfig) and `get-token` (kubectl's credential plugin).

use crate::api::{segment, Api};
use crate::args::{GetTokenArgs, KubeconfigArgs};
use crate::config::{write_private, ClientConfig};
use crate::error::{CliError, Result};
use crate::exec_credential::{self, cache_path, write_cache, Cached};
use crate::kubeconfig::{entry_from_download, exec_entry, merge, target_path, to_yaml};
use crate::output::{print_line, print_value, Format};
use crate::resolve;

pub async fn kubeconfig(args: KubeconfigArgs) -> Result<()> {
    let config = ClientConfig::load()?;
    let (_, token) = config.credentials()?;
    let api = Api::from_config(&config)?;
    let cluster = resolve::cluster(&api, &args.cluster.cluster).await?;
    let entry = if args.exec {
        let credential = exec_credential::fetch(&api, &cluster.id).await?;
        // The first kubectl run uses this credential instead of asking again.
        write_cache(
            &cache_path(api.url(), token, &cluster.id)?,
            &Cached::from_credential(&credential)?,
        )?;
        let exe = std::env::current_exe()
            .map_err(|e| CliError::local("cannot tell where kqueen is installed", e))?;
        exec_entry(&credential, &exe, api.url())
    } else {
        let yaml = api
            .get_text(&format!(
                "/api/v1/clusters/{}/kubeconfig",
                segment(&cluster.id)
            ))
            .await?;
        entry_from_download(&yaml, &format!("{}-{}", cluster.tenant, cluster.name))?
    };
    if args.print {
        let doc = merge("", &entry, true, "")?;
        return print_line(to_yaml(&doc)?.trim_end());
    }
    let path = target_path(args.file)?;
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(CliError::local(
                &format!("cannot read {}", path.display()),
                e,
            ))
        }
    };
    let doc = merge(
        &existing,
        &entry,
        !args.no_switch,
        &path.display().to_string(),
    )?;
    write_private(&path, to_yaml(&doc)?.as_bytes())?;
    print_line(&format!(
        "Context {} {} in {}{}.",
        entry.name,
        if args.exec {
            "(credentials fetched by `kqueen get-token` when needed)"
        } else {
            "(its token expires: run this again then, or use --exec)"
        },
        path.display(),
        if args.no_switch {
            ""
        } else {
            "; it is the current context"
        }
    ))
}

pub async fn get_token(args: GetTokenArgs) -> Result<()> {
    let credential = exec_credential::get_token(&args.cluster, args.url.as_deref()).await?;
    print_value(Format::Json, &credential)
}
