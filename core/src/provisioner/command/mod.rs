//! The `command` provisioner: an installer command chosen by the operator (kubeadm, kind, k3d,
//! terraform, a script) builds, scales, upgrades and deletes clusters. KQueen runs it, hands
//! it the request in environment variables, and records every line it prints: no black box.
//!
//! # What the command gets
//!
//! The command line comes from the provider's settings (`create_command`, `delete_command`,
//! `scale_command`, `upgrade_command`, `replace_command`). With `shell = false` (the default) it is split into
//! words with POSIX quoting rules (`'…'`, `"…"`, `\`) and run directly: `$VAR`, `~`, globs,
//! pipes and redirections mean nothing, so a value can never turn into shell code. With
//! `shell = true` it runs as `/bin/sh -c <line>`.
//!
//! The environment is cleared except `PATH`, `HOME`, `LANG`, `TMPDIR` (and the names in
//! [`CommandOptions::pass_env`]); then:
//!
//! | variable | value |
//! |---|---|
//! | `KQ_ACTION` | `create`, `delete`, `scale`, `upgrade` or `replace-node` |
//! | `KQ_CLUSTER_NAME`, `KQ_CLUSTER_ID` | the cluster |
//! | `KQ_TENANT`, `KQ_OPERATION_ID` | its tenant, the running operation |
//! | `KQ_PARAM_<NAME>` | every cluster parameter (`KQ_PARAM_NODE_COUNT`…) |
//! | `KQ_NODE_COUNT` | scale: the target node count |
//! | `KQ_REMOVE_NODE` | scale down by the autoscaler: the node whose machine must go (KQueen has drained it; it deletes its Node object afterwards); unset for other scales |
//! | `KQ_KUBERNETES_VERSION` | upgrade: the target version |
//! | `KQ_NODE_NAME` | replace-node: the dead node (KQueen has removed it from the cluster already); exit once its replacement has joined |
//! | `KQ_WORK_DIR` | the cluster's working directory (mode 0700, kept across runs); also the cwd |
//! | `KQ_KUBECONFIG` | `$KQ_WORK_DIR/kubeconfig`: create must write the admin kubeconfig there |
//!
//! # What the command says
//!
//! Every line of stdout and stderr goes to the cluster's timeline (stderr lines prefixed
//! `stderr: `), so an installer must not print credentials. Two kinds of lines, on either
//! stream, are instructions instead:
//!
//! - `::step TEXT` starts a new step named TEXT (the step list);
//! - `::progress N` sets the progress bar to N percent (0-100).
//!
//! Exit status 0 is success. Anything else fails the operation with the last stderr line as
//! the reason. A command that outlives `timeout_seconds` gets SIGTERM, then after
//! [`CommandOptions::kill_grace`] SIGKILL, sent to its whole process group (everything it
//! started and left in the group). Background processes a successful command leaves behind
//! are its own business: KQueen reads their output for at most two seconds more, then stops
//! listening.
//!
//! # Idempotency
//!
//! An operation runs its command once to the end; the operation's checkpoint records that.
//! When KQueen restarts during a run, the command runs again from the start: installers must
//! be idempotent (kubeadm, kind, k3d and terraform are, given the same working directory).

mod argv;
mod files;
mod run;
mod settings;
#[cfg(test)]
mod tests;

use std::time::Duration;

use async_trait::async_trait;

use super::{
    Capabilities, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, Step,
};
use crate::ValidationError;

/// The file (in the work dir) where create leaves the admin kubeconfig.
const KUBECONFIG_FILE: &str = "kubeconfig";

/// Larger than any real kubeconfig; a bigger file is a mistake, not a cluster.
const MAX_KUBECONFIG: u64 = 1024 * 1024;

/// Longer output lines are cut into pieces of this many bytes.
const MAX_LINE: u64 = 16 * 1024;

/// After the command exits, how long output still held open by a leftover background
/// process is read before KQueen stops listening.
const DRAIN: Duration = Duration::from_secs(2);

const DEFAULT_TIMEOUT_SECS: u64 = 1800;

const MAX_TIMEOUT_SECS: u64 = 86_400;

/// Words a shell would treat as syntax; without a shell they would silently become arguments.
const SHELL_OPERATORS: [&str; 12] = [
    "|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "<<", "2>", "2>&1",
];

/// Installation-wide options of the `command` provisioner.
#[derive(Debug, Clone)]
pub struct CommandOptions {
    /// Time between SIGTERM and SIGKILL when a command runs past its timeout.
    pub kill_grace: Duration,
    /// Names of KQueen's own environment variables passed on to commands (cloud
    /// credentials, `DOCKER_HOST`…), besides `PATH`, `HOME`, `LANG` and `TMPDIR`.
    pub pass_env: Vec<String>,
}

impl Default for CommandOptions {
    fn default() -> Self {
        Self {
            kill_grace: Duration::from_secs(10),
            pass_env: Vec::new(),
        }
    }
}

/// Runs the operator's installer commands (see the module docs for the contract).
pub struct CommandProvisioner {
    options: CommandOptions,
}

impl CommandProvisioner {
    pub fn new(options: CommandOptions) -> Self {
        Self { options }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Create,
    Delete,
    Scale,
    Upgrade,
    ReplaceNode,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Delete => "delete",
            Action::Scale => "scale",
            Action::Upgrade => "upgrade",
            Action::ReplaceNode => "replace-node",
        }
    }

    fn setting(self) -> &'static str {
        match self {
            Action::Create => "create_command",
            Action::Delete => "delete_command",
            Action::Scale => "scale_command",
            Action::Upgrade => "upgrade_command",
            Action::ReplaceNode => "replace_command",
        }
    }
}

const ACTIONS: [Action; 5] = [
    Action::Create,
    Action::Delete,
    Action::Scale,
    Action::Upgrade,
    Action::ReplaceNode,
];

fn command_spec(name: &str, label: &str, help: &str) -> ParamSpec {
    ParamSpec::new(
        name,
        label,
        ParamKind::String {
            default: None,
            max_len: 2000,
        },
    )
    .help(help)
}

#[async_trait]
impl Provisioner for CommandProvisioner {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            scale: true,
            upgrade: true,
            deletes_infrastructure: true,
            replace_node: true,
        }
    }

    /// Each capability needs its command.
    fn capabilities_for(&self, config: &Params) -> Capabilities {
        let has = |a: Action| {
            config
                .get(a.setting())
                .is_some_and(|c| !c.trim().is_empty())
        };
        Capabilities {
            scale: has(Action::Scale),
            upgrade: has(Action::Upgrade),
            deletes_infrastructure: has(Action::Delete),
            replace_node: has(Action::ReplaceNode),
        }
    }

    fn provider_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            command_spec(
                "create_command",
                "Create command",
                "Builds the cluster and writes its admin kubeconfig to $KQ_KUBECONFIG.",
            )
            .required(),
            command_spec(
                "delete_command",
                "Delete command",
                "Removes the cluster's machines. Without one, delete only forgets the cluster.",
            ),
            command_spec(
                "scale_command",
                "Scale command",
                "Changes the node count to $KQ_NODE_COUNT. When the autoscaler removes a node, \
                 $KQ_REMOVE_NODE names it (drained already): remove that machine.",
            ),
            command_spec(
                "upgrade_command",
                "Upgrade command",
                "Upgrades Kubernetes to $KQ_KUBERNETES_VERSION.",
            ),
            command_spec(
                "replace_command",
                "Replace node command",
                "Replaces the machine of the dead node $KQ_NODE_NAME (already removed from the \
                 cluster by KQueen) and exits once the new machine has joined.",
            ),
            ParamSpec::new(
                "environment",
                "Secret environment",
                ParamKind::Text { max_len: 16 * 1024 },
            )
            .secret()
            .help(
                "Credentials for the installer, one NAME=value per line (cloud keys, registry \
                 tokens): kept in the vault, given to every command, never shown again.",
            ),
            ParamSpec::new(
                "shell",
                "Run through /bin/sh",
                ParamKind::Boolean { default: false },
            )
            .help("Off: the line is split into words and run directly, without a shell."),
            ParamSpec::new(
                "timeout_seconds",
                "Timeout (seconds)",
                ParamKind::Integer {
                    default: Some(DEFAULT_TIMEOUT_SECS as i64),
                    min: Some(1),
                    max: Some(MAX_TIMEOUT_SECS as i64),
                },
            ),
        ])
    }

    fn cluster_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new(
                "node_count",
                "Nodes",
                ParamKind::Integer {
                    default: Some(1),
                    min: Some(1),
                    max: Some(100),
                },
            ),
            ParamSpec::new(
                "kubernetes_version",
                "Kubernetes version",
                ParamKind::String {
                    default: Some("1.33".into()),
                    max_len: 20,
                },
            ),
        ])
    }

    fn check_provider_secrets(&self, secrets: &Params) -> Result<(), ValidationError> {
        match secrets.get(ENVIRONMENT) {
            Some(text) => parse_environment(text)
                .map(drop)
                .map_err(|m| ValidationError::new(ENVIRONMENT, m)),
            None => Ok(()),
        }
    }

    fn check_provider(&self, config: &Params) -> Result<(), ValidationError> {
        let shell = Settings::from_config(config).shell;
        for action in ACTIONS {
            match config
                .get(action.setting())
                .filter(|l| !l.trim().is_empty())
            {
                Some(line) => {
                    argv(line, shell).map_err(|m| ValidationError::new(action.setting(), m))?;
                }
                None if action == Action::Create => {
                    return Err(ValidationError::new(action.setting(), "is required"));
                }
                None => {}
            }
        }
        Ok(())
    }

    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let line = ctx.setting(Action::Create.setting())?.to_owned();
        self.run_once(ctx, Action::Create, &line, Vec::new()).await
    }

    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let work_dir = absolute(&ctx.work_dir)?;
        read_kubeconfig(&work_dir).await
    }

    async fn kubeconfig_stored(&self, ctx: &OpContext) {
        remove_kubeconfig(&ctx.work_dir.join(KUBECONFIG_FILE));
    }

    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        match command_line(ctx, Action::Delete) {
            Some(line) => self.run_once(ctx, Action::Delete, &line, Vec::new()).await,
            None => {
                ctx.reporter.log(
                    "the provider has no delete command: KQueen forgets the cluster and \
                     leaves its machines as they are",
                );
                Ok(Step::Done(()))
            }
        }
    }

    async fn scale(&self, ctx: &mut OpContext, nodes: u32) -> Result<Step<()>, ProvisionError> {
        let line = command_line(ctx, Action::Scale)
            .ok_or_else(|| ProvisionError::Failed("the provider has no scale command".into()))?;
        let env = vec![("KQ_NODE_COUNT".to_owned(), nodes.to_string())];
        self.run_once(ctx, Action::Scale, &line, env).await
    }

    async fn scale_down(
        &self,
        ctx: &mut OpContext,
        nodes: u32,
        node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let line = command_line(ctx, Action::Scale)
            .ok_or_else(|| ProvisionError::Failed("the provider has no scale command".into()))?;
        if !crate::kubernetes::is_node_name(node) {
            return Err(ProvisionError::Failed(format!(
                "'{}' is not a node name",
                node.escape_default()
            )));
        }
        let env = vec![
            ("KQ_NODE_COUNT".to_owned(), nodes.to_string()),
            ("KQ_REMOVE_NODE".to_owned(), node.to_owned()),
        ];
        self.run_once(ctx, Action::Scale, &line, env).await
    }

    async fn replace_node(
        &self,
        ctx: &mut OpContext,
        node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let line = command_line(ctx, Action::ReplaceNode).ok_or_else(|| {
            ProvisionError::Failed("the provider has no replace node command".into())
        })?;
        if !crate::kubernetes::is_node_name(node) {
            return Err(ProvisionError::Failed(format!(
                "'{}' is not a node name",
                node.escape_default()
            )));
        }
        let env = vec![("KQ_NODE_NAME".to_owned(), node.to_owned())];
        self.run_once(ctx, Action::ReplaceNode, &line, env).await
    }

    async fn upgrade(
        &self,
        ctx: &mut OpContext,
        version: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let line = command_line(ctx, Action::Upgrade)
            .ok_or_else(|| ProvisionError::Failed("the provider has no upgrade command".into()))?;
        let plausible = !version.is_empty()
            && version.len() <= 40
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
        if !plausible {
            return Err(ProvisionError::Failed(format!(
                "'{}' is not a Kubernetes version",
                version.escape_default()
            )));
        }
        let env = vec![("KQ_KUBERNETES_VERSION".to_owned(), version.to_owned())];
        self.run_once(ctx, Action::Upgrade, &line, env).await
    }
}

pub use argv::split_command_line;
use argv::*;
use files::*;
use settings::*;
