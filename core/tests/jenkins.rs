//! The `jenkins` provisioner against a fake Jenkins (the test kit's `fake_jenkins`): create
//! followed through queue, build and console, resumed by a new instance, failures, delete
//! (cancel, stop, delete job), transient errors, CSRF crumbs, and the kubeconfig artifact.
//! Calls are repeated the way the engine repeats them; the pauses they ask for are skipped
//! because the fake advances per poll.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use kqueen_core::provisioner::jenkins::{JenkinsOptions, JenkinsProvisioner};
use kqueen_core::provisioner::{
    OpContext, Params, ProvisionError, Provisioner, Report, Reporter, Step,
};
use kqueen_core::vault::Secret;
use kqueen_testkit::fake_jenkins::{FakeJenkins, JobSpec, TOKEN, USER};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use uuid::Uuid;

const CREATE_JOB: &str = "clusters/create";
const DELETE_JOB: &str = "clusters/delete";
const CONSOLE: &str = "Started by user kqueen-bot\n\
    Provisioning cluster demo \u{2713}\n\
    Creating 5 nodes (Kubernetes 1.33)\r\n\
    Waiting for the API server\n\
    Cluster demo is ready\n\
    Finished: SUCCESS\n";
const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: admin@demo
clusters:
- name: demo
  cluster:
    server: https://10.0.0.1:6443
contexts:
- name: admin@demo
  context:
    cluster: demo
    user: admin
users:
- name: admin
  user:
    token: admin-token-do-not-show
";

fn console_lines(console: &str) -> Vec<String> {
    console
        .lines()
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect()
}

fn provisioner() -> JenkinsProvisioner {
    JenkinsProvisioner::new(JenkinsOptions {
        request_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
    })
}

/// A context as the engine builds it: settings validated by the provider schema (defaults
/// applied), the token among the secrets, cluster parameters validated by the cluster schema.
fn context(
    url: &str,
    token: &str,
    settings: &[(&str, &str)],
) -> (OpContext, UnboundedReceiver<Report>) {
    let p = provisioner();
    let mut input: Params = [
        ("url", url),
        ("job", CREATE_JOB),
        ("username", USER),
        ("api_token", token),
        ("poll_seconds", "1"),
    ]
    .iter()
    .chain(settings)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    input = p.provider_schema().validate(&input).unwrap();
    let token = input.remove("api_token").unwrap();
    p.check_provider(&input).unwrap();

    let mut ctx = OpContext::new("demo", "acme", std::env::temp_dir());
    ctx.cluster_id = Uuid::now_v7();
    ctx.operation_id = Uuid::now_v7();
    ctx.provider_config = input;
    ctx.provider_secrets
        .insert("api_token".into(), Secret::new(token.into_bytes()));
    ctx.params = p
        .cluster_schema()
        .validate(&BTreeMap::from([("node_count".into(), "5".into())]))
        .unwrap();
    let (tx, rx) = unbounded_channel();
    ctx.reporter = Reporter::new(tx);
    (ctx, rx)
}

#[derive(Clone, Copy)]
enum Op {
    Create,
    Delete,
}

/// Calls `op` until it is done (or fails), like the engine; returns how many calls it took.
async fn drive(
    p: &JenkinsProvisioner,
    ctx: &mut OpContext,
    op: Op,
) -> Result<usize, ProvisionError> {
    for calls in 1..=60 {
        let step = match op {
            Op::Create => p.create(ctx).await?,
            Op::Delete => p.delete(ctx).await?,
        };
        match step {
            Step::Done(()) => return Ok(calls),
            Step::Wait(pause) => assert_eq!(pause, Duration::from_secs(1), "poll_seconds"),
        }
    }
    panic!("the operation did not finish in 60 calls");
}

fn reports(rx: &mut UnboundedReceiver<Report>) -> Vec<Report> {
    let mut out = Vec::new();
    while let Ok(r) = rx.try_recv() {
        out.push(r);
    }
    out
}

fn steps(reports: &[Report]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Step(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn logs(reports: &[Report]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Log(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn progress(reports: &[Report]) -> Vec<u8> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Progress(p) => Some(*p),
            _ => None,
        })
        .collect()
}

/// The console lines among the log lines, in the order they were reported.
fn console_in(logs: &[String], console: &str) -> Vec<String> {
    let expected = console_lines(console);
    logs.iter()
        .filter(|l| expected.contains(l))
        .cloned()
        .collect()
}

fn failed(result: Result<impl std::fmt::Debug, ProvisionError>) -> String {
    match result {
        Err(ProvisionError::Failed(msg)) => msg,
        other => panic!("expected a permanent failure, got {other:?}"),
    }
}

fn transient(result: Result<impl std::fmt::Debug, ProvisionError>) -> String {
    match result {
        Err(ProvisionError::Transient(msg)) => msg,
        other => panic!("expected a transient error, got {other:?}"),
    }
}

fn success_job() -> JobSpec {
    JobSpec::new("SUCCESS", CONSOLE).artifact("out/admin.conf", KUBECONFIG.as_bytes())
}

#[tokio::test]
async fn creates_a_cluster_through_queue_build_and_console() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    let p = provisioner();
    let (mut ctx, mut rx) = context(
        &fake.url,
        TOKEN,
        &[("kubeconfig_artifact", "out/admin.conf")],
    );

    drive(&p, &mut ctx, Op::Create).await.unwrap();

    let triggers = fake.triggers();
    assert_eq!(triggers.len(), 1);
    assert_eq!(triggers[0].job, CREATE_JOB);
    let expected: BTreeMap<String, String> = [
        ("CLUSTER_ID", ctx.cluster_id.to_string()),
        ("CLUSTER_NAME", "demo".to_owned()),
        ("KUBERNETES_VERSION", "1.33".to_owned()),
        ("NODE_COUNT", "5".to_owned()),
        ("TENANT", "acme".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(triggers[0].params, expected);

    let reports = reports(&mut rx);
    assert_eq!(
        steps(&reports),
        [
            "Queued in Jenkins",
            "Build #1 running",
            "Build #1 succeeded"
        ]
    );
    let logs = logs(&reports);
    // Every console line once, in order, though the fake cuts the console mid-line (and
    // mid-character) between polls.
    assert_eq!(console_in(&logs, CONSOLE), console_lines(CONSOLE));
    assert_eq!(
        logs.iter()
            .filter(|l| l.starts_with("Jenkins queue: "))
            .count(),
        2,
        "each new queue reason once: {logs:?}"
    );
    let progress = progress(&reports);
    assert!(
        progress.iter().any(|p| (1..=95).contains(p)),
        "progress while building: {progress:?}"
    );
    assert_eq!(progress.last(), Some(&100));

    // A repeated call after Done (the engine restarted before saving it) changes nothing.
    assert!(matches!(p.create(&mut ctx).await, Ok(Step::Done(()))));
    assert_eq!(fake.triggers().len(), 1);

    let provisioned = p.kubeconfig(&mut ctx).await.unwrap();
    assert_eq!(provisioned.kubeconfig.expose(), KUBECONFIG.as_bytes());
    assert_eq!(
        provisioned.endpoint.as_deref(),
        Some("https://10.0.0.1:6443")
    );
    let build_url = format!("{}job/clusters/job/create/1/", fake.url);
    assert_eq!(provisioned.state["build_url"], build_url.as_str());
    assert_eq!(
        provisioned.state["queue_url"],
        format!("{}queue/item/1/", fake.url).as_str()
    );
    assert!(!format!("{provisioned:?}").contains("admin-token-do-not-show"));
}

#[tokio::test]
async fn a_new_instance_resumes_from_the_checkpoint() {
    let fake = FakeJenkins::start().await;
    let mut spec = success_job();
    spec.build_polls = 6;
    fake.add_job(CREATE_JOB, spec);
    let (mut ctx, mut rx) = context(
        &fake.url,
        TOKEN,
        &[("kubeconfig_artifact", "out/admin.conf")],
    );

    // The first worker gets as far as some console lines, then goes away.
    let first = provisioner();
    let mut before = Vec::new();
    while console_in(&before, CONSOLE).len() < 2 {
        assert!(matches!(first.create(&mut ctx).await, Ok(Step::Wait(_))));
        before.extend(logs(&reports(&mut rx)));
    }
    let saved = ctx.checkpoint.clone();
    drop((first, ctx, rx));

    // Another one continues from what the engine saved.
    let (mut ctx, mut rx) = context(
        &fake.url,
        TOKEN,
        &[("kubeconfig_artifact", "out/admin.conf")],
    );
    ctx.checkpoint = saved;
    let second = provisioner();
    drive(&second, &mut ctx, Op::Create).await.unwrap();
    let after = logs(&reports(&mut rx));

    assert_eq!(fake.triggers().len(), 1, "no second build");
    let mut seen = console_in(&before, CONSOLE);
    seen.extend(console_in(&after, CONSOLE));
    assert_eq!(seen, console_lines(CONSOLE), "no line lost or repeated");
    assert!(second.kubeconfig(&mut ctx).await.is_ok());
}

#[tokio::test]
async fn a_failed_build_fails_naming_the_build() {
    let fake = FakeJenkins::start().await;
    fake.add_job(
        CREATE_JOB,
        JobSpec::new("FAILURE", "terraform apply\nError: quota exceeded\n"),
    );
    let p = provisioner();
    let (mut ctx, mut rx) = context(&fake.url, TOKEN, &[]);

    let msg = failed(drive(&p, &mut ctx, Op::Create).await);
    assert!(msg.contains("FAILURE"), "{msg}");
    assert!(
        msg.contains(&format!("{}job/clusters/job/create/1/", fake.url)),
        "{msg}"
    );
    assert!(logs(&reports(&mut rx)).contains(&"Error: quota exceeded".to_owned()));
    // Called again, it fails again without asking Jenkins.
    let requests = fake.state().requests.len();
    failed(p.create(&mut ctx).await);
    assert_eq!(fake.state().requests.len(), requests);
    failed(p.kubeconfig(&mut ctx).await);
}

#[tokio::test]
async fn a_wrong_token_fails_without_showing_it() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    let p = provisioner();
    let wrong = "0123456789abcdef-wrong";
    let (mut ctx, _rx) = context(&fake.url, wrong, &[]);

    let msg = failed(p.create(&mut ctx).await);
    assert!(msg.contains("Jenkins refused the credentials"), "{msg}");
    assert!(msg.contains(USER), "{msg}");
    assert!(!msg.contains(wrong) && !msg.contains(TOKEN), "{msg}");
    assert!(fake.triggers().is_empty());
}

#[tokio::test]
async fn a_cancelled_queue_item_fails() {
    let fake = FakeJenkins::start().await;
    let mut spec = success_job();
    spec.cancel_in_queue = true;
    fake.add_job(CREATE_JOB, spec);
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);

    let msg = failed(drive(&p, &mut ctx, Op::Create).await);
    assert!(
        msg.contains("the Jenkins queue item was cancelled"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_missing_job_fails() {
    let fake = FakeJenkins::start().await;
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);

    let msg = failed(p.create(&mut ctx).await);
    assert!(
        msg.contains("Jenkins has no job 'clusters/create'"),
        "{msg}"
    );
}

#[tokio::test]
async fn server_errors_are_transient_and_the_operation_recovers() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);

    // While triggering: nothing is saved, the retry triggers.
    fake.state().fail_next = 1;
    let msg = transient(p.create(&mut ctx).await);
    assert!(msg.contains("503"), "{msg}");
    assert!(ctx.checkpoint.is_null() && fake.triggers().is_empty());

    // While following: the retry continues the same build.
    assert!(matches!(p.create(&mut ctx).await, Ok(Step::Wait(_))));
    for _ in 0..3 {
        assert!(matches!(p.create(&mut ctx).await, Ok(Step::Wait(_))));
    }
    fake.state().fail_next = 2;
    transient(p.create(&mut ctx).await);
    transient(p.create(&mut ctx).await);
    drive(&p, &mut ctx, Op::Create).await.unwrap();
    assert_eq!(fake.triggers().len(), 1);

    // Nobody listening at all.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", listener.local_addr().unwrap())
    };
    let (mut ctx, _rx) = context(&closed, TOKEN, &[]);
    let msg = transient(p.create(&mut ctx).await);
    assert!(msg.contains("cannot reach Jenkins"), "{msg}");
}

#[tokio::test]
async fn a_crumb_is_fetched_when_jenkins_asks_for_one() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    fake.state().require_crumb = true;
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);

    drive(&p, &mut ctx, Op::Create).await.unwrap();
    assert_eq!(fake.triggers().len(), 1);
    let crumbs = fake
        .state()
        .requests
        .iter()
        .filter(|r| r.ends_with("/crumbIssuer/api/json"))
        .count();
    assert_eq!(crumbs, 1);
}

#[tokio::test]
async fn a_forgotten_queue_item_is_found_among_the_builds() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    fake.state().forget_left_items = true;
    let p = provisioner();
    let (mut ctx, mut rx) = context(&fake.url, TOKEN, &[]);

    drive(&p, &mut ctx, Op::Create).await.unwrap();
    assert!(steps(&reports(&mut rx)).contains(&"Build #1 running".to_owned()));
}

#[tokio::test]
async fn delete_cancels_a_queued_create_build() {
    let fake = FakeJenkins::start().await;
    let mut spec = success_job();
    spec.queue_polls = 1000;
    fake.add_job(CREATE_JOB, spec);
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);
    for _ in 0..3 {
        assert!(matches!(p.create(&mut ctx).await, Ok(Step::Wait(_))));
    }

    // The delete is its own operation: it only has the unfinished create's checkpoint.
    let (mut del, mut rx) = context(&fake.url, TOKEN, &[]);
    del.create_checkpoint = ctx.checkpoint.clone();
    drive(&p, &mut del, Op::Delete).await.unwrap();
    {
        let state = fake.state();
        assert_eq!(state.cancels, vec![1], "cancelled once");
        assert!(state.queue[&1].cancelled);
        assert!(state.stops.is_empty());
        // Jenkins' redirect after the POST is not followed.
        assert!(!state.requests.iter().any(|r| r == "GET /jenkins/queue/"));
    }
    let reports = reports(&mut rx);
    assert!(steps(&reports).contains(&"Cancelling the queued create build".to_owned()));
    assert!(logs(&reports)
        .iter()
        .any(|l| l.starts_with("No delete job")));
}

#[tokio::test]
async fn delete_stops_a_running_create_build() {
    let fake = FakeJenkins::start().await;
    let mut spec = success_job();
    spec.build_polls = 1000;
    fake.add_job(CREATE_JOB, spec);
    let p = provisioner();
    let (mut ctx, mut rx) = context(&fake.url, TOKEN, &[]);
    while !steps(&reports(&mut rx)).contains(&"Build #1 running".to_owned()) {
        assert!(matches!(p.create(&mut ctx).await, Ok(Step::Wait(_))));
    }

    let (mut del, mut rx) = context(&fake.url, TOKEN, &[]);
    del.create_checkpoint = ctx.checkpoint.clone();
    let calls = drive(&p, &mut del, Op::Delete).await.unwrap();
    assert!(calls >= 2, "waits for the build to end");
    {
        let state = fake.state();
        assert_eq!(
            state.stops,
            vec![(CREATE_JOB.to_owned(), 1)],
            "stopped once"
        );
        assert_eq!(
            state.builds[&(CREATE_JOB.to_owned(), 1)].result.as_deref(),
            Some("ABORTED")
        );
        assert!(state.cancels.is_empty());
    }
    assert!(steps(&reports(&mut rx)).contains(&"Stopping create build #1".to_owned()));
}

#[tokio::test]
async fn delete_runs_the_delete_job_with_the_same_parameters() {
    let fake = FakeJenkins::start().await;
    fake.add_job(CREATE_JOB, success_job());
    fake.add_job(
        DELETE_JOB,
        JobSpec::new("SUCCESS", "destroying demo\ndone\n"),
    );
    let p = provisioner();
    let settings = [
        ("kubeconfig_artifact", "out/admin.conf"),
        ("delete_job", DELETE_JOB),
    ];
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &settings);
    drive(&p, &mut ctx, Op::Create).await.unwrap();
    let provisioned = p.kubeconfig(&mut ctx).await.unwrap();

    // The delete operation: a fresh checkpoint, the cluster's saved state.
    let cluster_id = ctx.cluster_id;
    let (mut ctx, mut rx) = context(&fake.url, TOKEN, &settings);
    ctx.cluster_id = cluster_id;
    ctx.cluster_state = provisioned.state.clone();
    drive(&p, &mut ctx, Op::Delete).await.unwrap();

    let triggers = fake.triggers();
    assert_eq!(triggers.len(), 2);
    assert_eq!(triggers[1].job, DELETE_JOB);
    assert_eq!(triggers[1].params, triggers[0].params);
    {
        let state = fake.state();
        assert!(state.stops.is_empty() && state.cancels.is_empty());
    }
    let reports = reports(&mut rx);
    assert_eq!(
        steps(&reports),
        [
            "Delete job queued in Jenkins",
            "Delete build #1 running",
            "Delete build #1 succeeded"
        ]
    );
    assert!(logs(&reports).contains(&"destroying demo".to_owned()));

    // A failing delete job fails the deletion.
    fake.add_job(DELETE_JOB, JobSpec::new("FAILURE", "no such cluster\n"));
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &settings);
    ctx.cluster_state = provisioned.state;
    let msg = failed(drive(&p, &mut ctx, Op::Delete).await);
    assert!(
        msg.contains("delete build #2") && msg.contains("FAILURE"),
        "{msg}"
    );
}

#[tokio::test]
async fn kubeconfig_problems_fail_without_showing_the_artifact() {
    let fake = FakeJenkins::start().await;
    fake.add_job(
        CREATE_JOB,
        JobSpec::new("SUCCESS", "ok\n").artifact("kubeconfig", b"password: hunter2-secret\n"),
    );
    let p = provisioner();
    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[]);
    drive(&p, &mut ctx, Op::Create).await.unwrap();
    let msg = failed(p.kubeconfig(&mut ctx).await);
    assert!(msg.contains("is not a kubeconfig"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");

    let (mut ctx, _rx) = context(&fake.url, TOKEN, &[("kubeconfig_artifact", "missing.yaml")]);
    drive(&p, &mut ctx, Op::Create).await.unwrap();
    let msg = failed(p.kubeconfig(&mut ctx).await);
    assert!(
        msg.contains("no artifact 'missing.yaml' of build #2"),
        "{msg}"
    );
}

#[test]
fn schemas_are_well_formed_and_settings_checked() {
    let p = provisioner();
    p.provider_schema().check().unwrap();
    p.cluster_schema().check().unwrap();
    let token = p.provider_schema().get("api_token").cloned().unwrap();
    assert!(token.secret && token.required);
    assert!(p.capabilities().deletes_infrastructure);
    assert!(!p.capabilities().scale && !p.capabilities().upgrade);
    // Only a provider with a delete job removes machines.
    let with = |job: &str| {
        let config: Params = [("delete_job".to_owned(), job.to_owned())].into();
        p.capabilities_for(&config).deletes_infrastructure
    };
    assert!(with("teardown") && !with("") && !with("  "));
    assert!(!p.capabilities_for(&Params::new()).deletes_infrastructure);
    assert!(!p.allows_exec(&Params::new()));
    let cluster = p.cluster_schema().validate(&Params::new()).unwrap();
    assert_eq!(cluster["node_count"], "3");
    assert_eq!(cluster["kubernetes_version"], "1.33");

    let check = |url: &str, job: &str| {
        let config: Params = [("url", url), ("job", job), ("username", USER)]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        p.check_provider(&config)
    };
    assert!(check("https://ci.example.com/jenkins", "a/b").is_ok());
    assert!(check("file:///etc", "a").is_err());
    assert!(check("https://ci.example.com/", "a/../b").is_err());
}
