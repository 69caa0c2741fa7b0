//! The `command` provisioner: an installer command chosen by the operator (kubeadm, kind, k3d,
//! terraform, a script) builds, scales, upgrades and deletes clusters. KQueen runs it, hands
//! it the request in environment variables, and records every line it prints: no black box.
//!
//! # What the command gets
//!
//! The command line comes from the provider's settings (`create_command`, `delete_command`,
//! `scale_command`, `upgrade_command`). With `shell = false` (the default) it is split into
//! words with POSIX quoting rules (`'…'`, `"…"`, `\`) and run directly: `$VAR`, `~`, globs,
//! pipes and redirections mean nothing, so a value can never turn into shell code. With
//! `shell = true` it runs as `/bin/sh -c <line>`.
//!
//! The environment is cleared except `PATH`, `HOME`, `LANG`, `TMPDIR` (and the names in
//! [`CommandOptions::pass_env`]); then:
//!
//! | variable | value |
//! |---|---|
//! | `KQ_ACTION` | `create`, `delete`, `scale` or `upgrade` |
//! | `KQ_CLUSTER_NAME`, `KQ_CLUSTER_ID` | the cluster |
//! | `KQ_TENANT`, `KQ_OPERATION_ID` | its tenant, the running operation |
//! | `KQ_PARAM_<NAME>` | every cluster parameter (`KQ_PARAM_NODE_COUNT`…) |
//! | `KQ_NODE_COUNT` | scale: the target node count |
//! | `KQ_KUBERNETES_VERSION` | upgrade: the target version |
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

use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::time::Instant;

use super::{
    Capabilities, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, Reporter, Step,
};
use crate::vault::Secret;
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
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Delete => "delete",
            Action::Scale => "scale",
            Action::Upgrade => "upgrade",
        }
    }

    fn setting(self) -> &'static str {
        match self {
            Action::Create => "create_command",
            Action::Delete => "delete_command",
            Action::Scale => "scale_command",
            Action::Upgrade => "upgrade_command",
        }
    }
}

const ACTIONS: [Action; 4] = [
    Action::Create,
    Action::Delete,
    Action::Scale,
    Action::Upgrade,
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
                "Changes the node count to $KQ_NODE_COUNT.",
            ),
            command_spec(
                "upgrade_command",
                "Upgrade command",
                "Upgrades Kubernetes to $KQ_KUBERNETES_VERSION.",
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

/// The provider's secret setting with environment variables for every command.
const ENVIRONMENT: &str = "environment";

/// `NAME=value` lines (blank lines and `#` comments skipped). Names are upper-case shell
/// variable names; KQueen's own (`KQ_…`) and `PATH`/`HOME` cannot be replaced. Messages name
/// the line and never quote a value.
fn parse_environment(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let n = i + 1;
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {n} is not NAME=value"));
        };
        let name = name.trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(format!(
                "line {n}: the name must be upper-case letters, digits and _"
            ));
        }
        if name.starts_with("KQ_") || matches!(name, "PATH" | "HOME") {
            return Err(format!("line {n}: {name} is set by KQueen"));
        }
        if value.contains('\0') {
            return Err(format!("line {n}: the value holds a NUL byte"));
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// Removes a plaintext kubeconfig when dropped.
struct KubeconfigFile(PathBuf);

impl Drop for KubeconfigFile {
    fn drop(&mut self) {
        remove_kubeconfig(&self.0);
    }
}

fn remove_kubeconfig(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(error = %e, "removing a plaintext kubeconfig failed"),
    }
}

/// Writes the admin kubeconfig for a command to use (mode 0600).
fn write_kubeconfig(path: &Path, kubeconfig: &Secret) -> Result<KubeconfigFile, ProvisionError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let guard = KubeconfigFile(path.to_owned());
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(kubeconfig.expose()))
        .map_err(|e| ProvisionError::Failed(format!("cannot write $KQ_KUBECONFIG: {e}")))?;
    Ok(guard)
}

/// The configured command line of `action`, if any.
fn command_line(ctx: &OpContext, action: Action) -> Option<String> {
    ctx.provider_config
        .get(action.setting())
        .filter(|l| !l.trim().is_empty())
        .cloned()
}

/// The provider settings that shape a run.
struct Settings {
    shell: bool,
    timeout: Duration,
}

impl Settings {
    fn from_config(config: &Params) -> Self {
        let shell = config.get("shell").is_some_and(|v| v.trim() == "true");
        let secs = config
            .get("timeout_seconds")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        Self {
            shell,
            timeout: Duration::from_secs(secs),
        }
    }
}

impl CommandProvisioner {
    /// Runs `action`'s command unless this operation already ran it to success.
    async fn run_once(
        &self,
        ctx: &mut OpContext,
        action: Action,
        line: &str,
        env: Vec<(String, String)>,
    ) -> Result<Step<()>, ProvisionError> {
        if ctx.checkpoint.get("finished").and_then(|v| v.as_str()) == Some(action.as_str()) {
            return Ok(Step::Done(()));
        }
        self.run(ctx, action, line, env).await?;
        match &mut ctx.checkpoint {
            serde_json::Value::Object(map) => {
                map.insert("finished".into(), action.as_str().into());
            }
            other => *other = serde_json::json!({ "finished": action.as_str() }),
        }
        Ok(Step::Done(()))
    }

    /// The process to start: `argv` in `work_dir`, with a cleared environment but for the
    /// basics and KQueen's variables (see the module docs).
    fn command(
        &self,
        ctx: &OpContext,
        action: Action,
        argv: &[String],
        work_dir: &Path,
        extra_env: Vec<(String, String)>,
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .current_dir(work_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so that a timeout stops everything it started.
            .process_group(0);
        let inherited = ["PATH", "HOME", "LANG", "TMPDIR"].into_iter();
        for name in inherited.chain(self.options.pass_env.iter().map(String::as_str)) {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.env("KQ_ACTION", action.as_str())
            .env("KQ_CLUSTER_NAME", &ctx.cluster_name)
            .env("KQ_CLUSTER_ID", ctx.cluster_id.to_string())
            .env("KQ_TENANT", &ctx.tenant)
            .env("KQ_OPERATION_ID", ctx.operation_id.to_string())
            .env("KQ_WORK_DIR", work_dir)
            .env("KQ_KUBECONFIG", work_dir.join(KUBECONFIG_FILE));
        for (name, value) in &ctx.params {
            // Schema names are [a-z][a-z0-9_]*; anything else cannot be a variable name.
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                cmd.env(format!("KQ_PARAM_{}", name.to_ascii_uppercase()), value);
            }
        }
        for (name, value) in extra_env {
            cmd.env(name, value);
        }
        cmd
    }

    /// Runs one command to its end (or its timeout), streaming its output to the reporter.
    #[tracing::instrument(skip_all, fields(cluster = %ctx.cluster_name, action = action.as_str()))]
    async fn run(
        &self,
        ctx: &OpContext,
        action: Action,
        line: &str,
        extra_env: Vec<(String, String)>,
    ) -> Result<(), ProvisionError> {
        let settings = Settings::from_config(&ctx.provider_config);
        let argv = argv(line, settings.shell)
            .map_err(|m| ProvisionError::Failed(format!("the {} {m}", action.setting())))?;
        let work_dir = prepare_work_dir(&ctx.work_dir).await?;
        // Later commands find the admin kubeconfig at $KQ_KUBECONFIG for as long as they run;
        // it is removed afterwards, whatever happens (the vault holds it).
        let _kubeconfig = match (&ctx.admin_kubeconfig, action) {
            (Some(kc), a) if a != Action::Create => {
                Some(write_kubeconfig(&work_dir.join(KUBECONFIG_FILE), kc)?)
            }
            _ => None,
        };

        let mut env = match ctx.provider_secrets.get(ENVIRONMENT) {
            Some(secret) => std::str::from_utf8(secret.expose())
                .map_err(|_| "is not text".to_owned())
                .and_then(parse_environment)
                .map_err(|m| {
                    ProvisionError::Failed(format!("the provider's secret environment {m}"))
                })?,
            None => Vec::new(),
        };
        env.extend(extra_env);
        let mut cmd = self.command(ctx, action, &argv, &work_dir, env);

        ctx.reporter
            .step(format!("Running the {} command", action.as_str()));
        tracing::info!(program = %argv[0], shell = settings.shell, "starting installer command");
        let mut child = cmd.spawn().map_err(|e| {
            ProvisionError::Failed(format!(
                "the {} command could not be started ({}): {e}",
                action.as_str(),
                argv[0]
            ))
        })?;
        let mut group = ProcessGroup(child.id().and_then(|id| Pid::from_raw(id as i32)));
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ProvisionError::Failed(format!(
                "the {} command's output could not be read",
                action.as_str()
            )));
        };
        let mut output = pin!(futures::stream::select(
            lines(stdout, false),
            lines(stderr, true)
        ));

        let mut out = OutputState::default();
        let deadline = Instant::now() + settings.timeout;
        let mut phase = Phase::Running;
        let mut status: Option<ExitStatus> = None;
        let mut output_open = true;
        let mut drain_until = None;
        let verb = action.as_str();
        while output_open || status.is_none() {
            let timer = match (status, phase) {
                (Some(_), _) => drain_until,
                (None, Phase::Running) => Some(deadline),
                (None, Phase::Stopping(kill_at)) => Some(kill_at),
                (None, Phase::Killed) => None,
            };
            tokio::select! {
                item = output.next(), if output_open => match item {
                    Some((is_stderr, text)) => out.handle(&ctx.reporter, is_stderr, text),
                    None => output_open = false,
                },
                exited = child.wait(), if status.is_none() => {
                    let exited = exited.map_err(|e| {
                        ProvisionError::Failed(format!("waiting for the {verb} command: {e}"))
                    })?;
                    if phase != Phase::Running {
                        // Stopping everything: also what it left running in its group.
                        group.signal(Signal::KILL);
                    }
                    // Reaped: its group id may be reused once the group is empty.
                    group.forget();
                    status = Some(exited);
                    drain_until = Some(Instant::now() + DRAIN);
                }
                () = tokio::time::sleep_until(timer.unwrap_or(deadline)), if timer.is_some() => {
                    match (status, phase) {
                        (Some(_), _) => break,
                        (None, Phase::Running) => {
                            ctx.reporter.log(format!(
                                "the {} command ran past its timeout of {} s: stopping it",
                                action.as_str(),
                                settings.timeout.as_secs()
                            ));
                            group.signal(Signal::TERM);
                            phase = Phase::Stopping(Instant::now() + self.options.kill_grace);
                        }
                        (None, _) => {
                            group.signal(Signal::KILL);
                            phase = Phase::Killed;
                        }
                    }
                }
            }
        }

        let status = status.ok_or_else(|| {
            ProvisionError::Failed(format!("the {} command did not finish", action.as_str()))
        })?;
        tracing::info!(%status, timed_out = phase != Phase::Running, "installer command ended");
        if phase != Phase::Running {
            return Err(ProvisionError::Failed(format!(
                "{} command timed out after {} s",
                action.as_str(),
                settings.timeout.as_secs()
            )));
        }
        if status.success() {
            return Ok(());
        }
        Err(ProvisionError::Failed(format!(
            "{} command {}",
            action.as_str(),
            failure(status, out.last_stderr)
        )))
    }
}

/// Why a command that ended by itself failed, completing "<action> command …".
fn failure(status: ExitStatus, last_stderr: Option<String>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), last_stderr) {
        (Some(code), Some(last)) => format!("exited with status {code}: {last}"),
        (Some(code), None) => format!("exited with status {code}"),
        (None, _) => match status.signal() {
            Some(sig) => format!("was killed by signal {sig}"),
            None => format!("ended abnormally ({status})"),
        },
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Timed out; SIGTERM sent, SIGKILL due at this instant.
    Stopping(Instant),
    Killed,
}

/// The command's process group until the command is reaped. Dropping it (the operation was
/// cancelled mid-run) kills the group, so no installer runs on unsupervised.
struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            // ESRCH (nothing left in the group) is the expected answer once it has ended.
            let _ = kill_process_group(pgid, signal);
        }
    }

    fn forget(&mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}

/// What the output said so far.
#[derive(Default)]
struct OutputState {
    last_stderr: Option<String>,
}

/// Longest part of a stderr line quoted in a failure reason.
const MAX_REASON: usize = 300;

impl OutputState {
    fn handle(&mut self, reporter: &Reporter, is_stderr: bool, line: String) {
        if let Some(rest) = line.strip_prefix("::progress ") {
            if let Ok(percent) = rest.trim().trim_end_matches('%').parse::<u8>() {
                if percent <= 100 {
                    reporter.progress(percent);
                    return;
                }
            }
        }
        if let Some(rest) = line.strip_prefix("::step ") {
            let name = rest.trim();
            if !name.is_empty() {
                reporter.step(name);
                return;
            }
        }
        if is_stderr {
            if !line.trim().is_empty() {
                let mut last = line.trim().to_owned();
                if last.len() > MAX_REASON {
                    let mut cut = MAX_REASON;
                    while !last.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    last.truncate(cut);
                    last.push('…');
                }
                self.last_stderr = Some(last);
            }
            reporter.log(format!("stderr: {line}"));
        } else {
            reporter.log(line);
        }
    }
}

/// The lines of one output stream, tagged with whether it is stderr. Invalid UTF-8 is
/// replaced, very long lines are cut; a read error ends the stream.
fn lines<R: AsyncRead + Unpin>(reader: R, is_stderr: bool) -> impl Stream<Item = (bool, String)> {
    futures::stream::unfold(BufReader::new(reader), move |mut reader| async move {
        let mut buf = Vec::new();
        match (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => None,
            Ok(_) => {
                let text = String::from_utf8_lossy(&buf);
                let text = text.trim_end_matches(['\n', '\r']).to_owned();
                Some(((is_stderr, text), reader))
            }
        }
    })
}

/// The argv a command line runs as; the error completes "the <setting> …".
fn argv(line: &str, shell: bool) -> Result<Vec<String>, String> {
    if shell {
        if line.trim().is_empty() {
            return Err("is empty".into());
        }
        return Ok(vec!["/bin/sh".into(), "-c".into(), line.into()]);
    }
    let words = split_words(line).map_err(|e| format!("does not split into words: {e}"))?;
    if let Some((op, _)) = words
        .iter()
        .find(|(w, quoted)| !quoted && SHELL_OPERATORS.contains(&w.as_str()))
    {
        return Err(format!(
            "contains the shell operator '{op}': quote it, or run the command with a shell"
        ));
    }
    let argv: Vec<String> = words.into_iter().map(|(w, _)| w).collect();
    let Some(program) = argv.first() else {
        return Err("is empty".into());
    };
    if program.is_empty() {
        return Err("names an empty program".into());
    }
    if program.contains('/') && !program.starts_with('/') {
        return Err(format!(
            "names the program '{program}' by a relative path: give an absolute path, \
             or a name looked up in PATH"
        ));
    }
    Ok(argv)
}

/// Splits a command line into words the way a POSIX shell does, without expanding anything:
/// blanks separate words; `'…'` is literal; in `"…"` a backslash escapes only `"` `\` `$`
/// `` ` `` and newline; elsewhere a backslash escapes any character; `#` at the start of a
/// word starts a comment. `$VAR`, `~`, `*` stay as they are.
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    Ok(split_words(line)?.into_iter().map(|(w, _)| w).collect())
}

/// Words, each with whether any part of it was quoted or escaped.
fn split_words(line: &str) -> Result<Vec<(String, bool)>, String> {
    let mut words = Vec::new();
    let mut word: Option<(String, bool)> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let (w, quoted) = word.get_or_insert_with(Default::default);
                *quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let (w, quoted) = word.get_or_insert_with(Default::default);
                *quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                // A line continuation joins, it does not start a word.
                Some('\n') => {}
                Some(c) => {
                    let (w, quoted) = word.get_or_insert_with(Default::default);
                    *quoted = true;
                    w.push(c);
                }
                None => return Err("it ends with a backslash".into()),
            },
            '#' if word.is_none() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            c => word.get_or_insert_with(Default::default).0.push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn absolute(dir: &Path) -> Result<PathBuf, ProvisionError> {
    std::path::absolute(dir)
        .map_err(|e| ProvisionError::Failed(format!("the cluster's work directory: {e}")))
}

/// Creates the work dir (private: it will hold an admin kubeconfig) and returns its
/// absolute path, which the command gets in variables although its cwd changes.
async fn prepare_work_dir(dir: &Path) -> Result<PathBuf, ProvisionError> {
    let dir = absolute(dir)?;
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .await
        .map_err(|e| {
            ProvisionError::Failed(format!(
                "cannot create the work directory {}: {e}",
                dir.display()
            ))
        })?;
    Ok(dir)
}

/// The kubeconfig the create command left in the work dir. Errors never quote its content.
async fn read_kubeconfig(work_dir: &Path) -> Result<Provisioned, ProvisionError> {
    let path = work_dir.join(KUBECONFIG_FILE);
    let failed = |m: &str| ProvisionError::Failed(m.to_owned());
    let meta = match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => {
            return Err(failed(
                "$KQ_KUBECONFIG written by the create command is not a file",
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(failed("the create command did not write $KQ_KUBECONFIG"))
        }
        Err(e) => {
            return Err(ProvisionError::Failed(format!(
                "cannot read $KQ_KUBECONFIG: {e}"
            )))
        }
    };
    if meta.len() > MAX_KUBECONFIG {
        return Err(failed(
            "$KQ_KUBECONFIG is larger than 1 MiB: not a kubeconfig",
        ));
    }
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|e| ProvisionError::Failed(format!("cannot read $KQ_KUBECONFIG: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| failed("$KQ_KUBECONFIG is not UTF-8 text"))?;
    let parsed = kube::config::Kubeconfig::from_yaml(&text)
        .map_err(|_| failed("$KQ_KUBECONFIG does not parse as a kubeconfig"))?;
    let endpoint = current_server(&parsed).map_err(|m| {
        ProvisionError::Failed(format!("the kubeconfig written by the create command {m}"))
    })?;
    Ok(Provisioned {
        kubeconfig: Secret::new(text.into_bytes()),
        endpoint: Some(endpoint),
        state: serde_json::json!({ "work_dir": work_dir }),
    })
}

/// The API server of the kubeconfig's current context (or of its only context).
fn current_server(k: &kube::config::Kubeconfig) -> Result<String, &'static str> {
    let name = match k.current_context.as_deref().filter(|c| !c.is_empty()) {
        Some(name) => name,
        None if k.contexts.len() == 1 => k.contexts[0].name.as_str(),
        None => return Err("names no current context"),
    };
    let context = k
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
        .ok_or("names a current context it does not define")?;
    k.clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .filter(|s| !s.trim().is_empty())
        .ok_or("has no server for its current context")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_environments_parse_without_quoting_values() {
        let env =
            parse_environment("# cloud\nAWS_KEY=a=b\r\n\n_X=\nTOKEN= spaced \n").expect("valid");
        assert_eq!(
            env,
            [
                ("AWS_KEY".to_owned(), "a=b".to_owned()),
                ("_X".to_owned(), String::new()),
                ("TOKEN".to_owned(), " spaced ".to_owned()),
            ]
        );
        for (bad, why) in [
            ("secret-value", "line 1 is not NAME=value"),
            ("ok=secret-value", "upper-case"),
            (
                "A=1\nKQ_TENANT=secret-value",
                "line 2: KQ_TENANT is set by KQueen",
            ),
            ("PATH=secret-value", "PATH is set by KQueen"),
            ("1A=secret-value", "upper-case"),
        ] {
            let e = parse_environment(bad).expect_err("refused");
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("secret-value"), "{e}");
        }
    }

    fn split(line: &str) -> Vec<String> {
        split_command_line(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    #[test]
    fn splits_like_a_shell_without_expanding() {
        assert_eq!(
            split("  kind  create\tcluster "),
            ["kind", "create", "cluster"]
        );
        assert_eq!(
            split(r#"echo '$HOME' "$HOME" $HOME ~ *"#),
            ["echo", "$HOME", "$HOME", "$HOME", "~", "*"]
        );
        assert_eq!(split(r#"a 'b c' "d e" f\ g"#), ["a", "b c", "d e", "f g"]);
        assert_eq!(split(r#"a"b"'c'd"#), ["abcd"]);
        assert_eq!(split(r#"x "" ''"#), ["x", "", ""]);
        assert_eq!(split(r#""a\"b\\c\$d\e""#), [r#"a"b\c$d\e"#]);
        assert_eq!(split(r"'a\b'"), [r"a\b"]);
        assert_eq!(split("a \\\nb"), ["a", "b"]);
        assert_eq!(split("a # comment\nb"), ["a", "b"]);
        assert_eq!(split("a#b"), ["a#b"]);
        assert_eq!(split("--set=k=v,w=\"x y\""), ["--set=k=v,w=x y"]);
        assert!(split("").is_empty());
        assert!(split("   ").is_empty());
        for bad in ["'open", "\"open", "trailing\\", "\"a\\"] {
            assert!(split_command_line(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn argv_checks_the_program() {
        assert_eq!(
            argv("/opt/kind create cluster", false).expect("absolute"),
            ["/opt/kind", "create", "cluster"]
        );
        assert!(
            argv("kind create", false).is_ok(),
            "a name looked up in PATH"
        );
        assert!(argv("bin/kind create", false).is_err(), "relative path");
        assert!(argv("'' create", false).is_err(), "empty program");
        assert!(argv("  ", false).is_err());
        assert!(
            argv("kind create | tee log", false).is_err(),
            "a pipe needs a shell"
        );
        assert!(
            argv("echo '|' \\>", false).is_ok(),
            "quoted operators are words"
        );
        assert_eq!(
            argv("kind create | tee log", true).expect("shell"),
            ["/bin/sh", "-c", "kind create | tee log"]
        );
        assert!(argv(" ", true).is_err());
    }

    #[test]
    fn output_protocol() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let reporter = Reporter::new(tx);
        let mut out = OutputState::default();
        for (err, line) in [
            (false, "::step Machines"),
            (false, "::progress 40"),
            (false, "::progress 400"),
            (false, "::step "),
            (true, "oops"),
            (true, "  "),
            (false, "::progress 55%"),
        ] {
            out.handle(&reporter, err, line.to_owned());
        }
        drop(reporter);
        let mut got = Vec::new();
        while let Ok(r) = rx.try_recv() {
            got.push(r);
        }
        use crate::provisioner::Report;
        assert_eq!(
            got,
            [
                Report::Step("Machines".into()),
                Report::Progress(40),
                Report::Log("::progress 400".into()),
                Report::Log("::step ".into()),
                Report::Log("stderr: oops".into()),
                Report::Log("stderr:   ".into()),
                Report::Progress(55),
            ]
        );
        assert_eq!(out.last_stderr.as_deref(), Some("oops"));
    }

    #[test]
    fn current_server_of_kubeconfigs() {
        let parse = |y: &str| kube::config::Kubeconfig::from_yaml(y).expect("yaml");
        let full = parse(
            "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n\
             - name: a\n  cluster: {server: 'https://a:6443'}\n\
             - name: b\n  cluster: {server: 'https://b:6443'}\n\
             contexts:\n- name: a\n  context: {cluster: a, user: u}\n\
             - name: b\n  context: {cluster: b, user: u}\nusers: []\n",
        );
        assert_eq!(current_server(&full), Ok("https://b:6443".into()));
        let one = parse(
            "clusters:\n- name: a\n  cluster: {server: 'https://a:6443'}\n\
             contexts:\n- name: a\n  context: {cluster: a}\n",
        );
        assert_eq!(current_server(&one), Ok("https://a:6443".into()));
        assert!(current_server(&parse("kind: Config\n")).is_err());
        let dangling =
            parse("current-context: x\ncontexts:\n- name: x\n  context: {cluster: nope}\n");
        assert!(current_server(&dangling).is_err());
    }
}
