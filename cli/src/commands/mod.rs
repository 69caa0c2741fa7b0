//! One file per group of commands; each reads the API's answer and prints it.

mod addons;
mod approvals;
mod apps;
mod autoscaling;
mod clusters;
mod device_login;
mod fleet;
mod kubeconfig;
mod login;
mod rollouts;

use std::collections::BTreeMap;

use crate::args::ClientCommand;
use crate::error::{CliError, Result};

/// Runs `command`.
pub async fn run(command: ClientCommand) -> Result<()> {
    match command {
        ClientCommand::Login(args) => login::login(args).await,
        ClientCommand::Logout => login::logout(),
        ClientCommand::Whoami(out) => login::whoami(out.output).await,
        ClientCommand::Clusters(cmd) => clusters::run(cmd).await,
        ClientCommand::Kubeconfig(args) => kubeconfig::kubeconfig(args).await,
        ClientCommand::GetToken(args) => kubeconfig::get_token(args).await,
        ClientCommand::Apps(cmd) => apps::run(cmd).await,
        ClientCommand::Addons(cmd) => addons::run(cmd).await,
        ClientCommand::Fleet(cmd) => fleet::run(cmd).await,
        ClientCommand::Approvals(cmd) => approvals::run(cmd).await,
        ClientCommand::Rollouts(cmd) => rollouts::run(cmd).await,
    }
}

/// `key=value` arguments as a map; `key=@file` reads the value from a file.
pub fn key_values(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(CliError::Usage(format!(
                "{pair:?} is not key=value (or key=@file)"
            )));
        };
        let value = match value.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|e| CliError::local(&format!("cannot read {file}"), e))?,
            None => value.to_owned(),
        };
        if map.insert(key.trim().to_owned(), value).is_some() {
            return Err(CliError::Usage(format!("{key} is given twice")));
        }
    }
    Ok(map)
}

/// A short line on standard error for people following along (never part of the answer).
pub fn progress(line: &str) {
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn key_values_read_files_and_refuse_nonsense() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kubeconfig");
        std::fs::write(&file, "apiVersion: v1").unwrap();
        let map = key_values(&[
            "node_count=3".into(),
            format!("kubeconfig=@{}", file.display()),
            "empty=".into(),
        ])
        .unwrap();
        assert_eq!(map["node_count"], "3");
        assert_eq!(map["kubeconfig"], "apiVersion: v1");
        assert_eq!(map["empty"], "");
        for bad in [
            vec!["novalue".to_owned()],
            vec!["=x".into()],
            vec!["a=1".into(), "a=2".into()],
        ] {
            assert_eq!(key_values(&bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
        assert_eq!(
            key_values(&["k=@/no/such/file".into()])
                .unwrap_err()
                .exit_code(),
            1
        );
    }
}
