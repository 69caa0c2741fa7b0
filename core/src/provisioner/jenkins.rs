//! The `jenkins` provisioner, KQueen's original one: a Jenkins job (any job that takes
//! parameters) builds the cluster and archives its admin kubeconfig; KQueen triggers the job,
//! follows the build and fetches the artifact.
//!
//! It speaks Jenkins' remote access API with HTTP basic auth (user name and API token):
//! `POST job/<path>/buildWithParameters` answers 201 with a `Location` naming a queue item;
//! `queue/item/<id>/api/json` shows `executable` once a build has started (or `cancelled`);
//! `job/<path>/<n>/api/json` tells `building`, `result`, `timestamp`, `estimatedDuration`;
//! `job/<path>/<n>/logText/progressiveText?start=<offset>` serves the console from a byte
//! offset (`X-Text-Size` is the next offset, `X-More-Data: true` while more may come);
//! artifacts are at `job/<path>/<n>/artifact/<file>`. Folders nest: `a/b` is `job/a/job/b`.
//! Jenkins 2.96+ needs no CSRF crumb from API-token callers; an older or stricter one that
//! answers 403 "No valid crumb" gets one from `crumbIssuer/api/json` and the request again.
//!
//! Each call does a little and returns. What was triggered (queue item, build number) and how
//! far the console was read live in the operation's checkpoint, so a restarted KQueen resumes
//! without a second build and without repeating console lines. What is left is one window: a
//! trigger whose answer is lost (KQueen stops, or the network fails, between Jenkins queueing
//! the build and the checkpoint being saved) is sent again; Jenkins folds it into the first
//! while that is still queued with the same parameters, not once it has started.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine as _;
use kube::config::Kubeconfig;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{cookie::Jar, redirect, Certificate, Client, Response, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{
    Capabilities, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, Reporter, Step,
};
use crate::vault::Secret;
use crate::ValidationError;

/// The provider secret holding the Jenkins API token.
const TOKEN: &str = "api_token";
const DEFAULT_ARTIFACT: &str = "kubeconfig";
const DEFAULT_POLL_SECONDS: u64 = 5;
const MAX_POLL_SECONDS: u64 = 300;
/// A kubeconfig is a few kilobytes; anything this big is the wrong artifact.
const MAX_ARTIFACT_BYTES: usize = 1 << 20;
/// A console "line" without a newline is cut at this length.
const MAX_LINE_BYTES: usize = 16 * 1024;
/// Polls to wait for the end of the console after the build has finished.
const DRAIN_POLLS: u32 = 3;

/// Installation-wide options of the `jenkins` provisioner.
#[derive(Debug, Clone)]
pub struct JenkinsOptions {
    /// Time limit of one HTTP request to Jenkins (console and artifact downloads included).
    pub request_timeout: Duration,
    /// Time limit of opening a connection to Jenkins.
    pub connect_timeout: Duration,
}

impl Default for JenkinsOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// Builds clusters with a Jenkins job; see the module documentation.
pub struct JenkinsProvisioner {
    options: JenkinsOptions,
}

impl JenkinsProvisioner {
    pub fn new(options: JenkinsOptions) -> Self {
        Self { options }
    }

    /// The provider's settings and an authenticated client for one call.
    fn open(&self, ctx: &OpContext) -> Result<(Settings, Jenkins), ProvisionError> {
        let settings = Settings::parse(&ctx.provider_config).map_err(|m| {
            ProvisionError::Failed(format!("the Jenkins provider is misconfigured: {m}"))
        })?;
        let jenkins = Jenkins::connect(&self.options, &settings, ctx.secret(TOKEN)?)?;
        Ok((settings, jenkins))
    }
}

fn string(default: Option<&str>, max_len: u32) -> ParamKind {
    ParamKind::String {
        default: default.map(str::to_owned),
        max_len,
    }
}

#[async_trait]
impl Provisioner for JenkinsProvisioner {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Jenkins
    }

    /// Delete runs the provider's `delete_job` when one is configured (and stops the create
    /// build if it is still going); without one, KQueen only forgets the cluster.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            scale: false,
            upgrade: false,
            deletes_infrastructure: true,
        }
    }

    /// Only a delete job removes machines; without one, delete forgets the cluster.
    fn capabilities_for(&self, config: &Params) -> Capabilities {
        Capabilities {
            deletes_infrastructure: config
                .get("delete_job")
                .is_some_and(|j| !j.trim().is_empty()),
            ..self.capabilities()
        }
    }

    fn provider_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new("url", "Jenkins URL", string(None, 500))
                .required()
                .help("Base URL of Jenkins, e.g. https://ci.example.com/jenkins/"),
            ParamSpec::new("job", "Create job", string(None, 500))
                .required()
                .help("The job that builds a cluster; a job in folders is written folder/job"),
            ParamSpec::new("username", "User name", string(None, 200)).required(),
            ParamSpec::new("api_token", "API token", string(None, 500))
                .required()
                .secret()
                .help("An API token of the user (Jenkins: your user > Security > API Token)"),
            ParamSpec::new(
                "kubeconfig_artifact",
                "Kubeconfig artifact",
                string(Some(DEFAULT_ARTIFACT), 500),
            )
            .help("Path of the archived kubeconfig among the build's artifacts"),
            ParamSpec::new("delete_job", "Delete job", string(None, 500))
                .help("A job run with the same parameters when a cluster is deleted (empty: none)"),
            ParamSpec::new(
                "poll_seconds",
                "Poll interval (seconds)",
                ParamKind::Integer {
                    default: Some(DEFAULT_POLL_SECONDS as i64),
                    min: Some(1),
                    max: Some(MAX_POLL_SECONDS as i64),
                },
            ),
            ParamSpec::new(
                "ca_cert",
                "CA certificate",
                ParamKind::Text { max_len: 64 * 1024 },
            )
            .help("PEM certificates to trust for Jenkins' HTTPS, besides the public CAs"),
        ])
    }

    fn cluster_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new(
                "node_count",
                "Nodes",
                ParamKind::Integer {
                    default: Some(3),
                    min: Some(1),
                    max: Some(100),
                },
            ),
            ParamSpec::new(
                "kubernetes_version",
                "Kubernetes version",
                string(Some("1.33"), 20),
            ),
        ])
    }

    fn check_provider(&self, config: &Params) -> Result<(), ValidationError> {
        Settings::parse(config)
            .map(drop)
            .map_err(|m| ValidationError::new("parameters", m))
    }

    #[tracing::instrument(skip_all, fields(cluster = %ctx.cluster_id, op = %ctx.operation_id))]
    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let (settings, mut jenkins) = self.open(ctx)?;
        let mut cp = Checkpoint::load(&ctx.checkpoint)?;
        let Some(mut run) = cp.create.take() else {
            let run = jenkins
                .trigger(&settings.job, &build_parameters(ctx))
                .await?;
            announce(&ctx.reporter, "Queued in Jenkins", &run);
            cp.create = Some(run);
            cp.store(ctx);
            return Ok(Step::Wait(settings.poll));
        };
        let outcome = follow(&jenkins, &mut run, "Build", settings.poll, &ctx.reporter).await;
        cp.create = Some(run.clone());
        cp.store(ctx);
        match outcome? {
            Step::Wait(d) => Ok(Step::Wait(d)),
            Step::Done(()) => finished(&run, "Build", &ctx.reporter),
        }
    }

    #[tracing::instrument(skip_all, fields(cluster = %ctx.cluster_id, op = %ctx.operation_id))]
    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let (settings, jenkins) = self.open(ctx)?;
        let cp = Checkpoint::load(&ctx.checkpoint)?;
        let run = match cp.create {
            Some(run) => run,
            None => Run::from_state(&ctx.cluster_state)?.ok_or_else(|| {
                ProvisionError::Failed("no Jenkins build is known for this cluster".into())
            })?,
        };
        if let Some(result) = run.result.as_deref().filter(|r| *r != SUCCESS) {
            return Err(ProvisionError::Failed(format!(
                "the Jenkins build ended with {result}: there is no kubeconfig to take"
            )));
        }
        let number = run.build_number.ok_or_else(|| {
            ProvisionError::Failed("the Jenkins build has not started yet".into())
        })?;
        let job = run.job_path()?;
        let build_url = jenkins.build_url(&job, number);
        let url = endpoint(
            &build_url,
            std::iter::once("artifact").chain(settings.artifact.iter().map(String::as_str)),
        );
        ctx.reporter.log(format!("Downloading {url}"));
        let what = format!(
            "artifact '{}' of build #{number} of job '{job}'",
            settings.artifact.join("/")
        );
        let bytes = jenkins
            .download(url.clone(), &what)
            .await?
            .ok_or_else(|| ProvisionError::Failed(format!("Jenkins has no {what} ({url})")))?;
        let endpoint = kubeconfig_endpoint(&bytes, &what)?;
        Ok(Provisioned {
            kubeconfig: Secret::new(bytes),
            endpoint,
            state: serde_json::json!({
                "build_url": build_url.as_str(),
                "queue_url": run.queue_url,
                "job": run.job,
                "queue_id": run.queue_id,
                "build_number": number,
            }),
        })
    }

    #[tracing::instrument(skip_all, fields(cluster = %ctx.cluster_id, op = %ctx.operation_id))]
    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let (settings, mut jenkins) = self.open(ctx)?;
        let mut cp = Checkpoint::load(&ctx.checkpoint)?;

        // First the create build: a cluster half-built by a job still running would be
        // finished (or fought over by the delete job) after KQueen forgot it.
        let mut halt = cp.halt.clone().unwrap_or_default();
        if !halt.done {
            // The build this delete already follows, else the one an unfinished create
            // started, else the one that built the cluster.
            let create = match &cp.create {
                Some(run) => Some(run.clone()),
                None => match Checkpoint::load(&ctx.create_checkpoint)?.create {
                    Some(run) => {
                        cp.create = Some(run.clone());
                        Some(run)
                    }
                    None => Run::from_state(&ctx.cluster_state)?,
                },
            };
            let outcome = match create {
                Some(mut run) => {
                    let outcome = halt_build(
                        &mut jenkins,
                        &mut run,
                        &mut halt,
                        settings.poll,
                        &ctx.reporter,
                    )
                    .await;
                    if cp.create.is_some() {
                        cp.create = Some(run);
                    }
                    outcome
                }
                None => Ok(Step::Done(())),
            };
            halt.done = matches!(outcome, Ok(Step::Done(())));
            cp.halt = Some(halt);
            cp.store(ctx);
            if let Step::Wait(d) = outcome? {
                return Ok(Step::Wait(d));
            }
        }

        let Some(delete_job) = &settings.delete_job else {
            ctx.reporter
                .log("No delete job is configured: KQueen forgets the cluster, its machines stay");
            return Ok(Step::Done(()));
        };
        let Some(mut run) = cp.delete.take() else {
            let run = jenkins.trigger(delete_job, &build_parameters(ctx)).await?;
            announce(&ctx.reporter, "Delete job queued in Jenkins", &run);
            cp.delete = Some(run);
            cp.store(ctx);
            return Ok(Step::Wait(settings.poll));
        };
        let outcome = follow(
            &jenkins,
            &mut run,
            "Delete build",
            settings.poll,
            &ctx.reporter,
        )
        .await;
        cp.delete = Some(run.clone());
        cp.store(ctx);
        match outcome? {
            Step::Wait(d) => Ok(Step::Wait(d)),
            Step::Done(()) => finished(&run, "Delete build", &ctx.reporter),
        }
    }
}

const SUCCESS: &str = "SUCCESS";

/// The parameters of both jobs: the request's, upper-cased, and who the cluster is.
fn build_parameters(ctx: &OpContext) -> Vec<(String, String)> {
    let mut p: BTreeMap<String, String> = ctx
        .params
        .iter()
        .map(|(k, v)| (k.to_ascii_uppercase(), v.clone()))
        .collect();
    // Set last: a cluster parameter cannot pass itself off as the cluster's identity.
    p.insert("CLUSTER_NAME".into(), ctx.cluster_name.clone());
    p.insert("CLUSTER_ID".into(), ctx.cluster_id.to_string());
    p.insert("TENANT".into(), ctx.tenant.clone());
    p.into_iter().collect()
}

fn announce(reporter: &Reporter, step: &str, run: &Run) {
    reporter.step(step);
    reporter.log(format!(
        "Triggered Jenkins job '{}': queue item {} ({})",
        run.job, run.queue_id, run.queue_url
    ));
    reporter.progress(0);
}

/// The answer once a followed build has ended.
fn finished(run: &Run, label: &str, reporter: &Reporter) -> Result<Step<()>, ProvisionError> {
    let number = run.build_number.unwrap_or_default();
    let url = run.build_url.as_deref().unwrap_or(&run.queue_url);
    match run.result.as_deref() {
        Some(SUCCESS) => {
            reporter.step(format!("{label} #{number} succeeded"));
            reporter.progress(100);
            Ok(Step::Done(()))
        }
        result => Err(ProvisionError::Failed(format!(
            "Jenkins {} #{number} of job '{}' ended with {}: see {url}console",
            label.to_lowercase(),
            run.job,
            result.unwrap_or("no result"),
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Checkpoint

/// One build KQueen triggered and follows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Run {
    /// The job, folders separated by '/'.
    job: String,
    queue_id: u64,
    queue_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build_url: Option<String>,
    /// Byte offset of the console read so far (Jenkins' `X-Text-Size`).
    #[serde(default)]
    console_offset: u64,
    /// An unfinished last console line, base64 (it may end inside a UTF-8 character).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    console_tail: String,
    /// Why the queue item waits, as last reported (to report changes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting_why: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    drain_polls: u32,
    /// The build's result once it has ended (SUCCESS, FAILURE, ABORTED…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Run {
    /// The create build recorded in a cluster's state by [`Provisioner::kubeconfig`].
    fn from_state(state: &serde_json::Value) -> Result<Option<Run>, ProvisionError> {
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

    fn job_path(&self) -> Result<JobPath, ProvisionError> {
        JobPath::parse(&self.job).map_err(|m| {
            ProvisionError::Failed(format!("the saved Jenkins job name is invalid: {m}"))
        })
    }

    fn tail(&self) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.console_tail)
            .unwrap_or_default()
    }

    fn set_tail(&mut self, tail: &[u8]) {
        self.console_tail = base64::engine::general_purpose::STANDARD.encode(tail);
    }
}

/// What delete did about the create build.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Halt {
    #[serde(default)]
    cancel_sent: bool,
    #[serde(default)]
    stop_sent: bool,
    /// The create build is no longer queued or running.
    #[serde(default)]
    done: bool,
}

/// This provisioner's part of [`OpContext::checkpoint`].
#[derive(Debug, Default, Serialize, Deserialize)]
struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    create: Option<Run>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    halt: Option<Halt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delete: Option<Run>,
    /// Anything else found there is kept as it was.
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

impl Checkpoint {
    fn load(value: &serde_json::Value) -> Result<Self, ProvisionError> {
        if value.is_null() {
            return Ok(Self::default());
        }
        serde_json::from_value(value.clone()).map_err(|_| {
            ProvisionError::Failed(
                "the saved progress of this operation is not the Jenkins provisioner's".into(),
            )
        })
    }

    fn store(&self, ctx: &mut OpContext) {
        // Serialising plain structs and a JSON map cannot fail.
        if let Ok(v) = serde_json::to_value(self) {
            ctx.checkpoint = v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Following builds

/// Advances a triggered build by one poll: queue, then build and console. `Done` once the
/// build has ended, its result in `run.result`.
async fn follow(
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
async fn halt_build(
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
fn take_lines(tail: &mut Vec<u8>, chunk: &[u8]) -> Vec<String> {
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

fn line_text(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    String::from_utf8_lossy(raw).into_owned()
}

/// The API server of the kubeconfig's current context, after checking it is a kubeconfig.
/// Never puts the content (or a parser message quoting it) in an error.
fn kubeconfig_endpoint(bytes: &[u8], what: &str) -> Result<Option<String>, ProvisionError> {
    let invalid = |why: &str| ProvisionError::Failed(format!("the {what} {why}"));
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("is not text"))?;
    if text.trim().is_empty() {
        return Err(invalid("is empty"));
    }
    let config = Kubeconfig::from_yaml(text).map_err(|_| invalid("is not a kubeconfig"))?;
    if config.clusters.is_empty() {
        return Err(invalid("is not a kubeconfig (it names no cluster)"));
    }
    Ok(crate::kubernetes::current_server(&config))
}

// ---------------------------------------------------------------------------------------------
// Settings

/// A provider's settings, checked.
struct Settings {
    /// Ends with '/'.
    base: Url,
    job: JobPath,
    username: String,
    artifact: Vec<String>,
    delete_job: Option<JobPath>,
    poll: Duration,
    ca_cert: Option<String>,
}

impl Settings {
    /// Errors are `field: message`, as the schema's.
    fn parse(config: &Params) -> Result<Self, String> {
        let field = |name: &str| config.get(name).map(|s| s.trim()).filter(|s| !s.is_empty());
        let required = |name: &str| field(name).ok_or_else(|| format!("{name}: is required"));
        let base = parse_base_url(required("url")?).map_err(|m| format!("url: {m}"))?;
        let job = JobPath::parse(required("job")?).map_err(|m| format!("job: {m}"))?;
        let username = required("username")?.to_owned();
        if username.contains(':') {
            return Err("username: must not contain ':'".into());
        }
        let artifact = parse_artifact(field("kubeconfig_artifact").unwrap_or(DEFAULT_ARTIFACT))
            .map_err(|m| format!("kubeconfig_artifact: {m}"))?;
        let delete_job = field("delete_job")
            .map(JobPath::parse)
            .transpose()
            .map_err(|m| format!("delete_job: {m}"))?;
        let poll = match field("poll_seconds") {
            None => DEFAULT_POLL_SECONDS,
            Some(s) => s
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_POLL_SECONDS).contains(n))
                .ok_or_else(|| {
                    format!("poll_seconds: must be a whole number from 1 to {MAX_POLL_SECONDS}")
                })?,
        };
        let ca_cert = field("ca_cert").map(str::to_owned);
        if let Some(pem) = &ca_cert {
            certificates(pem).map_err(|m| format!("ca_cert: {m}"))?;
        }
        Ok(Self {
            base,
            job,
            username,
            artifact,
            delete_job,
            poll: Duration::from_secs(poll),
            ca_cert,
        })
    }
}

fn parse_base_url(s: &str) -> Result<Url, String> {
    let mut url = Url::parse(s).map_err(|_| "must be an http:// or https:// URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("must be an http:// or https:// URL".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not contain credentials (use username and api_token)".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must not have a query or a fragment".into());
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// Path segments with nothing that could climb out of where they are put.
fn segments(s: &str, what: &str) -> Result<Vec<String>, String> {
    let s = s.trim().trim_matches('/');
    if s.is_empty() {
        return Err(format!("must name a {what}"));
    }
    s.split('/')
        .map(|seg| {
            if seg.is_empty() || seg == "." || seg == ".." || seg.chars().any(char::is_control) {
                Err(format!("'{seg}' is not a valid {what} path element"))
            } else {
                Ok(seg.to_owned())
            }
        })
        .collect()
}

fn parse_artifact(s: &str) -> Result<Vec<String>, String> {
    if s.trim().starts_with('/') {
        return Err("must be relative to the build's artifacts".into());
    }
    segments(s, "file")
}

fn certificates(pem: &str) -> Result<Vec<Certificate>, String> {
    let certs = Certificate::from_pem_bundle(pem.as_bytes())
        .map_err(|_| "is not a PEM certificate bundle".to_owned())?;
    if certs.is_empty() {
        return Err("contains no PEM certificate".into());
    }
    Ok(certs)
}

/// A job's full name: its folders and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JobPath(Vec<String>);

impl JobPath {
    fn parse(s: &str) -> Result<Self, String> {
        segments(s, "job").map(Self)
    }

    /// `base/job/a/job/b/<tail…>`.
    fn url(&self, base: &Url, tail: &[&str]) -> Url {
        endpoint(
            base,
            self.0
                .iter()
                .flat_map(|name| ["job", name.as_str()])
                .chain(tail.iter().copied()),
        )
    }
}

impl fmt::Display for JobPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("/"))
    }
}

/// `base` with `segments` appended (each percent-encoded as needed).
fn endpoint<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Url {
    let mut url = base.clone();
    // Only http(s) URLs with a host get here, and those always have path segments.
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}

// ---------------------------------------------------------------------------------------------
// Jenkins' remote API

enum QueueState {
    Waiting(Option<String>),
    Started(u64),
    Cancelled,
    /// Jenkins forgets queue items some minutes after they leave the queue.
    Gone,
}

#[derive(Deserialize)]
struct QueueItemJson {
    #[serde(default)]
    cancelled: Option<bool>,
    #[serde(default)]
    executable: Option<ExecutableJson>,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Deserialize)]
struct ExecutableJson {
    number: u64,
}

#[derive(Deserialize)]
struct JobJson {
    #[serde(default)]
    builds: Vec<JobBuildJson>,
}

#[derive(Deserialize)]
struct JobBuildJson {
    number: u64,
    #[serde(default, rename = "queueId")]
    queue_id: Option<u64>,
}

#[derive(Deserialize)]
struct BuildJson {
    #[serde(default)]
    building: bool,
    #[serde(default)]
    result: Option<String>,
    /// Start, in milliseconds since the epoch.
    #[serde(default)]
    timestamp: i64,
    /// Milliseconds, or -1 when Jenkins has no history to estimate from.
    #[serde(default, rename = "estimatedDuration")]
    estimated_duration: i64,
}

impl BuildJson {
    /// Percent done by Jenkins' estimate, at most 95 until the build has ended.
    fn progress(&self) -> Option<u8> {
        if self.estimated_duration <= 0 || self.timestamp <= 0 {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        let now = i64::try_from(now.as_millis()).ok()?;
        let elapsed = now.saturating_sub(self.timestamp).max(0);
        let percent = elapsed.saturating_mul(100) / self.estimated_duration;
        u8::try_from(percent.clamp(0, 95)).ok()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrumbJson {
    crumb: String,
    crumb_request_field: String,
}

struct Console {
    text: Vec<u8>,
    next: u64,
    more: bool,
}

/// An authenticated client of one Jenkins for one provisioner call.
struct Jenkins {
    /// Follows redirects (artifacts may be served from elsewhere; reqwest drops the
    /// credentials when a redirect leaves the host).
    get: Client,
    /// Does not: Jenkins answers actions with a redirect to a page nobody needs.
    post: Client,
    base: Url,
    username: String,
    token: String,
    /// A CSRF crumb, once Jenkins has asked for one (it is bound to the session cookie,
    /// which the two clients share).
    crumb: Option<(HeaderName, HeaderValue)>,
}

impl Jenkins {
    fn connect(
        options: &JenkinsOptions,
        settings: &Settings,
        token: &Secret,
    ) -> Result<Self, ProvisionError> {
        let token = std::str::from_utf8(token.expose())
            .map(str::trim)
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ProvisionError::Failed(format!(
                    "provider secret '{TOKEN}' is not a valid API token"
                ))
            })?
            .to_owned();
        let jar = Arc::new(Jar::default());
        let certs = match &settings.ca_cert {
            Some(pem) => certificates(pem).map_err(|m| {
                ProvisionError::Failed(format!("the Jenkins provider's ca_cert {m}"))
            })?,
            None => Vec::new(),
        };
        let client = |policy: redirect::Policy| {
            let mut builder = Client::builder()
                .use_rustls_tls()
                .user_agent(concat!("kqueen/", env!("CARGO_PKG_VERSION")))
                .timeout(options.request_timeout)
                .connect_timeout(options.connect_timeout)
                .cookie_provider(jar.clone())
                .redirect(policy);
            for cert in &certs {
                builder = builder.add_root_certificate(cert.clone());
            }
            builder.build().map_err(|e| {
                ProvisionError::Failed(format!("cannot set up an HTTP client for Jenkins: {e}"))
            })
        };
        Ok(Self {
            get: client(redirect::Policy::limited(5))?,
            post: client(redirect::Policy::none())?,
            base: settings.base.clone(),
            username: settings.username.clone(),
            token,
            crumb: None,
        })
    }

    fn build_url(&self, job: &JobPath, number: u64) -> Url {
        job.url(&self.base, &[&number.to_string(), ""])
    }

    fn queue_url(&self, id: u64) -> Url {
        endpoint(&self.base, ["queue", "item", &id.to_string(), ""])
    }

    /// `None` on 404; errors for other failures.
    async fn get(&self, url: Url, what: &str) -> Result<Option<Response>, ProvisionError> {
        let resp = self
            .get
            .get(url)
            .basic_auth(&self.username, Some(&self.token))
            .send()
            .await
            .map_err(|e| unreachable(e, what))?;
        self.check(resp, what)
    }

    async fn get_json<T: DeserializeOwned>(
        &self,
        url: Url,
        what: &str,
    ) -> Result<Option<T>, ProvisionError> {
        match self.get(url, what).await? {
            Some(resp) => json(resp, what).await.map(Some),
            None => Ok(None),
        }
    }

    /// A form POST; `None` on 404. Fetches a CSRF crumb and tries again if Jenkins asks.
    async fn post(
        &mut self,
        url: Url,
        form: &[(String, String)],
        what: &str,
    ) -> Result<Option<Response>, ProvisionError> {
        let resp = self.send_post(url.clone(), form, what).await?;
        if resp.status() != StatusCode::FORBIDDEN || self.crumb.is_some() {
            return self.check(resp, what);
        }
        let body = resp.text().await.unwrap_or_default();
        if !body.to_ascii_lowercase().contains("crumb") {
            return Err(self.refusal(StatusCode::FORBIDDEN, what));
        }
        tracing::debug!("Jenkins asks for a CSRF crumb");
        self.crumb = Some(self.fetch_crumb().await?);
        let resp = self.send_post(url, form, what).await?;
        self.check(resp, what)
    }

    async fn send_post(
        &self,
        url: Url,
        form: &[(String, String)],
        what: &str,
    ) -> Result<Response, ProvisionError> {
        let mut request = self
            .post
            .post(url)
            .basic_auth(&self.username, Some(&self.token))
            .form(form);
        if let Some((name, value)) = &self.crumb {
            request = request.header(name.clone(), value.clone());
        }
        request.send().await.map_err(|e| unreachable(e, what))
    }

    fn check(&self, resp: Response, what: &str) -> Result<Option<Response>, ProvisionError> {
        let status = resp.status();
        if status.is_success() || status.is_redirection() {
            Ok(Some(resp))
        } else if status == StatusCode::NOT_FOUND {
            Ok(None)
        } else {
            Err(self.refusal(status, what))
        }
    }

    fn refusal(&self, status: StatusCode, what: &str) -> ProvisionError {
        match status {
            StatusCode::UNAUTHORIZED => ProvisionError::Failed(format!(
                "Jenkins refused the credentials of user '{}' ({status} on {what}): check the \
                 user name and API token",
                self.username
            )),
            StatusCode::FORBIDDEN => ProvisionError::Failed(format!(
                "Jenkins refused the credentials of user '{}' ({status} on {what}): a wrong API \
                 token, or the user lacks the permission",
                self.username
            )),
            s if s.is_server_error()
                || s == StatusCode::TOO_MANY_REQUESTS
                || s == StatusCode::REQUEST_TIMEOUT =>
            {
                ProvisionError::Transient(format!("Jenkins answered {status} on {what}"))
            }
            _ => ProvisionError::Failed(format!("Jenkins answered {status} on {what}")),
        }
    }

    async fn fetch_crumb(&self) -> Result<(HeaderName, HeaderValue), ProvisionError> {
        let what = "the CSRF crumb";
        let url = endpoint(&self.base, ["crumbIssuer", "api", "json"]);
        let crumb: CrumbJson = self.get_json(url, what).await?.ok_or_else(|| {
            ProvisionError::Failed("Jenkins asks for a CSRF crumb but has no crumb issuer".into())
        })?;
        let bad = || ProvisionError::Failed("Jenkins sent an unusable CSRF crumb".into());
        let name =
            HeaderName::from_bytes(crumb.crumb_request_field.as_bytes()).map_err(|_| bad())?;
        let mut value = HeaderValue::from_str(&crumb.crumb).map_err(|_| bad())?;
        value.set_sensitive(true);
        Ok((name, value))
    }

    /// Queues a build of `job`.
    async fn trigger(
        &mut self,
        job: &JobPath,
        params: &[(String, String)],
    ) -> Result<Run, ProvisionError> {
        let what = format!("the trigger of job '{job}'");
        let url = job.url(&self.base, &["buildWithParameters"]);
        let resp = self.post(url, params, &what).await?.ok_or_else(|| {
            ProvisionError::Failed(format!(
                "Jenkins has no job '{job}' ({})",
                job.url(&self.base, &[""])
            ))
        })?;
        let id = queue_id(resp.headers()).ok_or_else(|| {
            ProvisionError::Failed(format!(
                "Jenkins accepted {what} ({}) but named no queue item in its answer",
                resp.status()
            ))
        })?;
        tracing::info!(job = %job, queue_id = id, "Jenkins build queued");
        Ok(Run {
            job: job.to_string(),
            queue_id: id,
            queue_url: self.queue_url(id).to_string(),
            ..Run::default()
        })
    }

    async fn queue_item(&self, id: u64) -> Result<QueueState, ProvisionError> {
        let what = format!("queue item {id}");
        let url = endpoint(&self.queue_url(id), ["api", "json"]);
        let Some(item) = self.get_json::<QueueItemJson>(url, &what).await? else {
            return Ok(QueueState::Gone);
        };
        Ok(if let Some(executable) = item.executable {
            QueueState::Started(executable.number)
        } else if item.cancelled == Some(true) {
            QueueState::Cancelled
        } else {
            QueueState::Waiting(item.why)
        })
    }

    /// The build of `job` that came from queue item `id`, among its recent builds.
    async fn build_from_queue(
        &self,
        job: &JobPath,
        id: u64,
    ) -> Result<Option<u64>, ProvisionError> {
        let what = format!("the builds of job '{job}'");
        let mut url = job.url(&self.base, &["api", "json"]);
        url.query_pairs_mut()
            .append_pair("tree", "builds[number,queueId]{0,100}");
        let info: JobJson = self.get_json(url, &what).await?.ok_or_else(|| {
            ProvisionError::Failed(format!("Jenkins has no job '{job}' any more"))
        })?;
        Ok(info
            .builds
            .iter()
            .find(|b| b.queue_id == Some(id))
            .map(|b| b.number))
    }

    async fn build_info(
        &self,
        build_url: &Url,
        what: &str,
    ) -> Result<Option<BuildJson>, ProvisionError> {
        let mut url = endpoint(build_url, ["api", "json"]);
        url.query_pairs_mut()
            .append_pair("tree", "number,building,result,timestamp,estimatedDuration");
        self.get_json(url, what).await
    }

    async fn console(
        &self,
        build_url: &Url,
        start: u64,
        what: &str,
    ) -> Result<Console, ProvisionError> {
        let mut url = endpoint(build_url, ["logText", "progressiveText"]);
        url.query_pairs_mut()
            .append_pair("start", &start.to_string());
        let what = format!("the console of {what}");
        let Some(resp) = self.get(url, &what).await? else {
            return Ok(Console {
                text: Vec::new(),
                next: start,
                more: false,
            });
        };
        let size = header(resp.headers(), "x-text-size").and_then(|v| v.parse::<u64>().ok());
        let more =
            header(resp.headers(), "x-more-data").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let text = resp
            .bytes()
            .await
            .map_err(|e| unreachable(e, &what))?
            .to_vec();
        let next = size.unwrap_or(start + text.len() as u64);
        Ok(Console { text, next, more })
    }

    /// A file, at most [`MAX_ARTIFACT_BYTES`]; `None` on 404.
    async fn download(&self, url: Url, what: &str) -> Result<Option<Vec<u8>>, ProvisionError> {
        let Some(mut resp) = self.get(url, what).await? else {
            return Ok(None);
        };
        let too_big = || ProvisionError::Failed(format!("the {what} is too big for a kubeconfig"));
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_ARTIFACT_BYTES as u64)
        {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| unreachable(e, what))? {
            if bytes.len() + chunk.len() > MAX_ARTIFACT_BYTES {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Some(bytes))
    }

    async fn cancel_queue_item(&mut self, id: u64) -> Result<(), ProvisionError> {
        let mut url = endpoint(&self.base, ["queue", "cancelItem"]);
        url.query_pairs_mut().append_pair("id", &id.to_string());
        // 404: the item left the queue meanwhile; the next poll sees where it went.
        self.post(url, &[], &format!("the cancellation of queue item {id}"))
            .await
            .map(drop)
    }

    async fn stop(&mut self, build_url: &Url, what: &str) -> Result<(), ProvisionError> {
        let url = endpoint(build_url, ["stop"]);
        self.post(url, &[], &format!("the stop of {what}"))
            .await
            .map(drop)
    }
}

/// The id of the queue item in a `Location` like `https://ci/queue/item/42/`.
fn queue_id(headers: &HeaderMap) -> Option<u64> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let (_, rest) = location.split_once("queue/item/")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

async fn json<T: DeserializeOwned>(resp: Response, what: &str) -> Result<T, ProvisionError> {
    let body = resp.bytes().await.map_err(|e| unreachable(e, what))?;
    serde_json::from_slice(&body).map_err(|_| {
        ProvisionError::Failed(format!(
            "Jenkins answered {what} with something other than its JSON API (is the URL that of \
             Jenkins?)"
        ))
    })
}

/// A transport failure (refused, reset, timed out, TLS): worth retrying.
fn unreachable(e: reqwest::Error, what: &str) -> ProvisionError {
    let mut causes = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        causes.push_str(": ");
        causes.push_str(&cause.to_string());
        source = cause.source();
    }
    let message = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        e.without_url().to_string()
    };
    ProvisionError::Transient(format!(
        "cannot reach Jenkins for {what}: {message}{causes}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn urls_of_folders_builds_and_artifacts() {
        let base = parse_base_url("https://ci.example.com/jenkins").expect("url");
        let job = JobPath::parse("/team a/clusters/create/").expect("job");
        assert_eq!(
            job.url(&base, &["buildWithParameters"]).as_str(),
            "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/buildWithParameters"
        );
        let build = job.url(&base, &["7", ""]);
        assert_eq!(
            build.as_str(),
            "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/7/"
        );
        assert_eq!(
            endpoint(&build, ["artifact", "out", "admin.conf"]).as_str(),
            "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/7/artifact/out/admin.conf"
        );
    }

    #[test]
    fn settings_are_checked() {
        let ok = config(&[
            ("url", "http://jenkins:8080/"),
            ("job", "create"),
            ("username", "kq"),
        ]);
        let s = Settings::parse(&ok).expect("valid");
        assert_eq!(s.artifact, vec!["kubeconfig".to_owned()]);
        assert_eq!(s.poll, Duration::from_secs(5));
        let err = |extra: &[(&str, &str)]| {
            let mut c = ok.clone();
            c.extend(config(extra));
            Settings::parse(&c).err().unwrap_or_default()
        };
        assert!(err(&[("url", "ftp://x/")]).starts_with("url:"));
        assert!(err(&[("url", "jenkins:8080")]).starts_with("url:"));
        assert!(err(&[("url", "https://u:p@ci/")]).contains("credentials"));
        assert!(!err(&[("url", "https://u:p@ci/")]).contains("u:p"));
        assert!(err(&[("job", "a/../b")]).starts_with("job:"));
        assert!(err(&[("job", "a//b")]).starts_with("job:"));
        assert!(err(&[("kubeconfig_artifact", "/etc/passwd")]).starts_with("kubeconfig_artifact:"));
        assert!(err(&[("kubeconfig_artifact", "../x")]).starts_with("kubeconfig_artifact:"));
        assert!(err(&[("poll_seconds", "0")]).starts_with("poll_seconds:"));
        assert!(err(&[("poll_seconds", "301")]).starts_with("poll_seconds:"));
        assert!(err(&[("ca_cert", "not a certificate")]).starts_with("ca_cert:"));
    }

    #[test]
    fn console_lines_wait_for_their_end() {
        let mut tail = Vec::new();
        assert_eq!(take_lines(&mut tail, b"one\r\ntw"), vec!["one"]);
        // A UTF-8 character cut between two reads survives.
        let check = "✓".as_bytes();
        let mut chunk = b"o ".to_vec();
        chunk.extend_from_slice(&check[..1]);
        assert!(take_lines(&mut tail, &chunk).is_empty());
        let mut chunk = check[1..].to_vec();
        chunk.extend_from_slice(b"\nthree\n\nfour");
        assert_eq!(take_lines(&mut tail, &chunk), vec!["two ✓", "three", ""]);
        assert_eq!(tail, b"four");
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(take_lines(&mut tail, &long).len(), 1);
        assert!(tail.is_empty());
    }

    #[test]
    fn queue_ids_from_locations() {
        let mut h = HeaderMap::new();
        h.insert(
            LOCATION,
            HeaderValue::from_static("https://ci/queue/item/42/"),
        );
        assert_eq!(queue_id(&h), Some(42));
        h.insert(LOCATION, HeaderValue::from_static("/jenkins/queue/item/7"));
        assert_eq!(queue_id(&h), Some(7));
        h.insert(LOCATION, HeaderValue::from_static("https://ci/job/x/"));
        assert_eq!(queue_id(&h), None);
    }

    #[test]
    fn progress_is_capped_until_the_end() {
        let now = i64::try_from(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock")
                .as_millis(),
        )
        .expect("ms");
        let build = |started_ago: i64, estimate: i64| BuildJson {
            building: true,
            result: None,
            timestamp: now - started_ago,
            estimated_duration: estimate,
        };
        let half = build(50_000, 100_000).progress().expect("estimate");
        assert!((45..=55).contains(&half), "{half}");
        assert_eq!(build(500_000, 100_000).progress(), Some(95));
        assert_eq!(build(1_000, -1).progress(), None);
    }

    #[test]
    fn kubeconfig_endpoint_and_no_leaks() {
        let kc = b"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://10.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: s3cr3t\n";
        assert_eq!(
            kubeconfig_endpoint(kc, "it").expect("valid").as_deref(),
            Some("https://10.0.0.1:6443")
        );
        for bad in [&b""[..], b"  \n", b"token: s3cr3t: [", b"just: s3cr3t\n"] {
            let err = kubeconfig_endpoint(bad, "it")
                .expect_err("invalid")
                .to_string();
            assert!(!err.contains("s3cr3t"), "{err}");
        }
    }
}
