//! Following a triggered build: the checkpoint (what was triggered, how far the console
//! was read), the follow loop, halting a build, console lines, the kubeconfig artifact.

use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::provisioner::jenkins::{Jenkins, JobPath, QueueState, DRAIN_POLLS, MAX_LINE_BYTES};
use crate::provisioner::{OpContext, ProvisionError, Reporter, Step};

/// One build KQueen triggered and follows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Run {
    /// The job, folders separated by '/'.
    pub(super) job: String,
    pub(super) queue_id: u64,
    pub(super) queue_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) build_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) build_url: Option<String>,
    /// Byte offset of the console read so far (Jenkins' `X-Text-Size`).
    #[serde(default)]
    pub(super) console_offset: u64,
    /// An unfinished last console line, base64 (it may end inside a UTF-8 character).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) console_tail: String,
    /// Why the queue item waits, as last reported (to report changes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) waiting_why: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) drain_polls: u32,
    /// The build's result once it has ended (SUCCESS, FAILURE, ABORTED…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<String>,
}

pub(super) fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Run {
    /// The create build recorded in a cluster's state by [`Provisioner::kubeconfig`].
    pub(super) fn from_state(state: &serde_json::Value) -> Result<Option<Run>, ProvisionError> {
        if state.is_null() {
            return Ok(None);
        }
        serde_json::from_value(state.clone())
            .map(Some)
            .map_err(|_| {
                ProvisionError::Failed(
                    "the cluster's saved state does not name its Jenkins build".into(),
                )
            })
    }

    pub(super) fn job_path(&self) -> Result<JobPath, ProvisionError> {
        JobPath::parse(&self.job).map_err(|m| {
            ProvisionError::Failed(format!("the saved Jenkins job name is invalid: {m}"))
        })
    }

    pub(super) fn tail(&self) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.console_tail)
            .unwrap_or_default()
    }

    pub(super) fn set_tail(&mut self, tail: &[u8]) {
        self.console_tail = base64::engine::general_purpose::STANDARD.encode(tail);
    }
}

/// What delete did about the create build.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Halt {
    #[serde(default)]
    pub(super) cancel_sent: bool,
    #[serde(default)]
    pub(super) stop_sent: bool,
    /// The create build is no longer queued or running.
    #[serde(default)]
    pub(super) done: bool,
}

/// This provisioner's part of [`OpContext::checkpoint`].
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) create: Option<Run>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) halt: Option<Halt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) delete: Option<Run>,
    /// Anything else found there is kept as it was.
    #[serde(flatten)]
    pub(super) other: serde_json::Map<String, serde_json::Value>,
}

impl Checkpoint {
    pub(super) fn load(value: &serde_json::Value) -> Result<Self, ProvisionError> {
        crate::provisioner::read_checkpoint(value, "Jenkins")
    }

    pub(super) fn store(&self, ctx: &mut OpContext) {
        ctx.write_checkpoint(self);
    }
}

// ---------------------------------------------------------------------------------------------
// Following builds

/// Advances a triggered build by one poll: queue, then build and console. `Done` once the
/// build has ended, its result in `run.result`.
pub(super) async fn follow(
    jenkins: &Jenkins,
    run: &mut Run,
    label: &str,
    poll: Duration,
    reporter: &Reporter,
) -> Result<Step<()>, ProvisionError> {
    if run.result.is_some() {
        return Ok(Step::Done(()));
    }
    let job = run.job_path()?;
    let number = match run.build_number {
        Some(n) => n,
        None => match jenkins.queue_item(run.queue_id).await? {
            QueueState::Waiting(why) => {
                // Compared without digits: "Expires in 4.9 sec" counts down at every poll.
                let key = |w: &Option<String>| {
                    w.as_deref()
                        .map(|w| w.replace(|c: char| c.is_ascii_digit(), ""))
                };
                if key(&why) != key(&run.waiting_why) {
                    if let Some(why) = &why {
                        reporter.log(format!("Jenkins queue: {why}"));
                    }
                    run.waiting_why = why;
                }
                return Ok(Step::Wait(poll));
            }
            QueueState::Cancelled => {
                return Err(ProvisionError::Failed(format!(
                    "the Jenkins queue item was cancelled ({})",
                    run.queue_url
                )))
            }
            QueueState::Started(n) => n,
            QueueState::Gone => match jenkins.build_from_queue(&job, run.queue_id).await? {
                Some(n) => n,
                None => {
                    return Err(ProvisionError::Failed(format!(
                        "Jenkins no longer knows queue item {} of job '{job}' and no build of \
                         the job came from it",
                        run.queue_id
                    )))
                }
            },
        },
    };
    let build_url = jenkins.build_url(&job, number);
    if run.build_number.is_none() {
        run.build_number = Some(number);
        run.build_url = Some(build_url.to_string());
        reporter.step(format!("{label} #{number} running"));
        reporter.log(format!("Jenkins build: {build_url}"));
    }

    let what = format!("build #{number} of job '{job}'");
    let info = jenkins
        .build_info(&build_url, &what)
        .await?
        .ok_or_else(|| {
            ProvisionError::Failed(format!("Jenkins no longer has {what} ({build_url})"))
        })?;
    let console = jenkins
        .console(&build_url, run.console_offset, &what)
        .await?;
    let mut tail = run.tail();
    for line in take_lines(&mut tail, &console.text) {
        reporter.log(line);
    }
    run.console_offset = console.next;
    run.set_tail(&tail);

    let result = match info.result {
        Some(result) if !info.building => result,
        // Still running (a pipeline may set its result early; it has ended when it says so).
        _ => {
            if let Some(p) = info.progress() {
                reporter.progress(p);
            }
            return Ok(Step::Wait(poll));
        }
    };
    if console.more && run.drain_polls < DRAIN_POLLS {
        // Ended, but the last console lines are still being written.
        run.drain_polls += 1;
        return Ok(Step::Wait(poll));
    }
    if !tail.is_empty() {
        reporter.log(line_text(&tail));
        run.set_tail(&[]);
    }
    run.result = Some(result);
    Ok(Step::Done(()))
}

/// Cancels the create build if it is still queued, stops it if it is running; `Done` once it
/// is neither.
pub(super) async fn halt_build(
    jenkins: &mut Jenkins,
    run: &mut Run,
    halt: &mut Halt,
    poll: Duration,
    reporter: &Reporter,
) -> Result<Step<()>, ProvisionError> {
    if run.result.is_some() {
        return Ok(Step::Done(()));
    }
    let job = run.job_path()?;
    let number = match run.build_number {
        Some(n) => n,
        None => match jenkins.queue_item(run.queue_id).await? {
            QueueState::Cancelled => return Ok(Step::Done(())),
            QueueState::Waiting(_) => {
                if !halt.cancel_sent {
                    reporter.step("Cancelling the queued create build");
                    jenkins.cancel_queue_item(run.queue_id).await?;
                    halt.cancel_sent = true;
                }
                // Confirmed by the next poll (it may have started in the meantime).
                return Ok(Step::Wait(poll));
            }
            QueueState::Started(n) => n,
            QueueState::Gone => match jenkins.build_from_queue(&job, run.queue_id).await? {
                Some(n) => n,
                None => return Ok(Step::Done(())),
            },
        },
    };
    let build_url = jenkins.build_url(&job, number);
    run.build_number = Some(number);
    run.build_url = Some(build_url.to_string());
    let what = format!("build #{number} of job '{job}'");
    match jenkins.build_info(&build_url, &what).await? {
        Some(info) if info.building => {
            if !halt.stop_sent {
                reporter.step(format!("Stopping create build #{number}"));
                jenkins.stop(&build_url, &what).await?;
                halt.stop_sent = true;
            }
            Ok(Step::Wait(poll))
        }
        _ => Ok(Step::Done(())),
    }
}

/// Splits console text into complete lines; an unfinished last line waits in `tail`.
pub(super) fn take_lines(tail: &mut Vec<u8>, chunk: &[u8]) -> Vec<String> {
    tail.extend_from_slice(chunk);
    let mut lines = Vec::new();
    if let Some(last_newline) = tail.iter().rposition(|b| *b == b'\n') {
        let rest = tail.split_off(last_newline + 1);
        lines.extend(tail[..last_newline].split(|b| *b == b'\n').map(line_text));
        *tail = rest;
    }
    if tail.len() > MAX_LINE_BYTES {
        lines.push(line_text(tail));
        tail.clear();
    }
    lines
}

pub(super) fn line_text(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    String::from_utf8_lossy(raw).into_owned()
}

/// The API server of the kubeconfig's current context, after checking it is a kubeconfig.
/// Never puts the content (or a parser message quoting it) in an error.
pub(super) fn kubeconfig_endpoint(
    bytes: &[u8],
    what: &str,
) -> Result<Option<String>, ProvisionError> {
    let invalid = |why: &str| ProvisionError::Failed(format!("the {what} {why}"));
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("is not text"))?;
    if text.trim().is_empty() {
        return Err(invalid("is empty"));
    }
    let config =
        crate::kubernetes::read_kubeconfig(text).map_err(|_| invalid("is not a kubeconfig"))?;
    if config.clusters.is_empty() {
        return Err(invalid("is not a kubeconfig (it names no cluster)"));
    }
    Ok(crate::kubernetes::current_server(&config))
}
