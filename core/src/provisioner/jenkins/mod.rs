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

mod client;
mod follow;
mod settings;
#[cfg(test)]
mod tests;
mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

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
            replace_node: false,
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
            .map_err(|m| ValidationError::new("settings", m))
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

use client::*;
use follow::*;
use settings::*;
use wire::*;
