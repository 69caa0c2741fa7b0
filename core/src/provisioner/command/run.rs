//! Running one command: its process group, its output streamed into the timeline (with the
//! `::step` and `::progress` instructions), the timeout, the failure reason.

use std::path::Path;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};

use futures::{Stream, StreamExt};
use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::time::Instant;

use crate::provisioner::command::{
    argv, parse_environment, prepare_work_dir, write_kubeconfig, Action, CommandProvisioner,
    Settings, DRAIN, ENVIRONMENT, KUBECONFIG_FILE, MAX_LINE,
};
use crate::provisioner::{OpContext, ProvisionError, Reporter, Step};

/// This provisioner's checkpoint: which command of the operation ran to success.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    /// `create`, `delete`, `scale` or `upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finished: Option<String>,
}

impl CommandProvisioner {
    /// Runs `action`'s command unless this operation already ran it to success.
    pub(super) async fn run_once(
        &self,
        ctx: &mut OpContext,
        action: Action,
        line: &str,
        env: Vec<(String, String)>,
    ) -> Result<Step<()>, ProvisionError> {
        let mut checkpoint: Checkpoint = ctx.read_checkpoint("command")?;
        if checkpoint.finished.as_deref() == Some(action.as_str()) {
            return Ok(Step::Done(()));
        }
        self.run(ctx, action, line, env).await?;
        checkpoint.finished = Some(action.as_str().to_owned());
        ctx.write_checkpoint(&checkpoint);
        Ok(Step::Done(()))
    }

    /// The process to start: `argv` in `work_dir`, with a cleared environment but for the
    /// basics and KQueen's variables (see the module docs).
    pub(super) fn command(
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
    pub(super) async fn run(
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
pub(super) fn failure(status: ExitStatus, last_stderr: Option<String>) -> String {
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
pub(super) enum Phase {
    Running,
    /// Timed out; SIGTERM sent, SIGKILL due at this instant.
    Stopping(Instant),
    Killed,
}

/// The command's process group until the command is reaped. Dropping it (the operation was
/// cancelled mid-run) kills the group, so no installer runs on unsupervised.
pub(super) struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            // ESRCH (nothing left in the group) is the expected answer once it has ended.
            let _ = kill_process_group(pgid, signal);
        }
    }

    pub(super) fn forget(&mut self) {
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
pub(super) struct OutputState {
    pub(super) last_stderr: Option<String>,
}

/// Longest part of a stderr line quoted in a failure reason.
pub(super) const MAX_REASON: usize = 300;

impl OutputState {
    pub(super) fn handle(&mut self, reporter: &Reporter, is_stderr: bool, line: String) {
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
pub(super) fn lines<R: AsyncRead + Unpin>(
    reader: R,
    is_stderr: bool,
) -> impl Stream<Item = (bool, String)> {
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
