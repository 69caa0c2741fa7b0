//! The `import` provisioner against the fake API server, and fuzzing of the kubeconfig parser
//! (it must never panic, whatever it is given).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use axum::http::Method;
use base64::Engine;
use kqueen_core::kubernetes::{client, parse_kubeconfig, AuthKind};
use kqueen_core::provisioner::import::{ImportOptions, ImportProvisioner};
use kqueen_core::provisioner::{OpContext, ProvisionError, Provisioner, Report, Reporter, Step};
use kqueen_core::vault::Secret;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use support::fake_kube::{refused_url, silent_server, FakeKube};
use tokio::sync::mpsc;

fn provisioner() -> ImportProvisioner {
    ImportProvisioner::new(ImportOptions::default())
}

fn ctx_with(kubeconfig: &str) -> (OpContext, mpsc::UnboundedReceiver<Report>) {
    let mut ctx = OpContext::new("imported", "acme", std::env::temp_dir());
    ctx.param_secrets
        .insert("kubeconfig".into(), Secret::new(kubeconfig.as_bytes()));
    let (tx, rx) = mpsc::unbounded_channel();
    ctx.reporter = Reporter::new(tx);
    (ctx, rx)
}

fn reports(rx: &mut mpsc::UnboundedReceiver<Report>) -> Vec<Report> {
    let mut out = Vec::new();
    while let Ok(r) = rx.try_recv() {
        out.push(r);
    }
    out
}

fn exec_kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
         users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n\
         \x20     command: /bin/false\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
         current-context: x\n"
    )
}

#[test]
fn schemas_are_well_formed() {
    let p = provisioner();
    let caps = p.capabilities();
    assert!(!caps.scale && !caps.upgrade && !caps.deletes_infrastructure);
    let provider = p.provider_schema();
    provider.check().unwrap();
    let defaults = provider.validate(&Default::default()).unwrap();
    assert_eq!(defaults["allow_exec"], "false");
    assert_eq!(defaults["probe_timeout_seconds"], "10");
    let help = provider.get("allow_exec").unwrap().help.clone().unwrap();
    assert!(help.contains("KQueen server"), "{help}");
    assert!(provider
        .validate(&[("probe_timeout_seconds".to_owned(), "121".to_owned())].into())
        .is_err());

    let cluster = p.cluster_schema();
    cluster.check().unwrap();
    let kubeconfig = cluster.get("kubeconfig").unwrap();
    assert!(kubeconfig.required && kubeconfig.secret);
    let context = cluster.get("context").unwrap();
    assert!(!context.required && !context.secret);
}

#[tokio::test]
async fn check_request_accepts_a_reachable_cluster() {
    let fake = FakeKube::start().await;
    let (ctx, _) = ctx_with(&fake.admin_kubeconfig());
    provisioner().check_request(&ctx).await.unwrap();
}

#[tokio::test]
async fn check_request_explains_what_is_wrong() {
    let p = provisioner();
    let fake = FakeKube::start().await;

    let mut ctx = OpContext::new("imported", "acme", std::env::temp_dir());
    let err = p.check_request(&ctx).await.unwrap_err();
    assert_eq!(
        (err.field, err.message.as_str()),
        ("kubeconfig", "is required")
    );

    ctx.param_secrets
        .insert("kubeconfig".into(), Secret::new(vec![0xff, 0xfe]));
    assert!(p
        .check_request(&ctx)
        .await
        .unwrap_err()
        .message
        .contains("UTF-8"));

    let (mut ctx, _) = ctx_with(&fake.admin_kubeconfig());
    ctx.params.insert("context".into(), "nope".into());
    let err = p.check_request(&ctx).await.unwrap_err();
    assert_eq!(err.field, "context");
    assert!(err.message.contains("'fake'"), "{}", err.message);

    let (url, _silent) = silent_server().await;
    let (mut ctx, _) = ctx_with(&fake.admin_kubeconfig().replace(fake.url(), &url));
    ctx.provider_config
        .insert("probe_timeout_seconds".into(), "1".into());
    let err = p.check_request(&ctx).await.unwrap_err();
    assert_eq!(
        err.message,
        "the API server did not answer /version within 1 s"
    );

    let refused = refused_url().await;
    let (ctx, _) = ctx_with(&fake.admin_kubeconfig().replace(fake.url(), &refused));
    let err = p.check_request(&ctx).await.unwrap_err();
    assert!(
        err.message.contains("connection refused"),
        "{}",
        err.message
    );

    let wrong = fake
        .admin_kubeconfig()
        .replace(support::fake_kube::ADMIN_TOKEN, "not-the-token");
    let (ctx, _) = ctx_with(&wrong);
    let err = p.check_request(&ctx).await.unwrap_err();
    assert!(err.message.contains("401"), "{}", err.message);
    assert!(!err.message.contains("not-the-token"));
}

#[tokio::test]
async fn credential_plugins_need_the_provider_setting() {
    let fake = FakeKube::start().await;
    let (mut ctx, _) = ctx_with(&exec_kubeconfig(fake.url()));
    let err = provisioner().check_request(&ctx).await.unwrap_err();
    assert!(err.message.contains("exec plugin"), "{}", err.message);

    // Allowed: the plugin runs (and /bin/false gives no credentials).
    ctx.provider_config
        .insert("allow_exec".into(), "true".into());
    let err = provisioner().check_request(&ctx).await.unwrap_err();
    assert!(
        err.message.contains("did not produce credentials"),
        "{}",
        err.message
    );

    // Forbidden installation-wide: refused whatever the provider says.
    let strict = ImportProvisioner::new(ImportOptions { forbid_exec: true });
    let err = strict.check_request(&ctx).await.unwrap_err();
    assert!(err.message.contains("exec plugin"), "{}", err.message);
    assert!(strict.check_provider(&ctx.provider_config).is_err());
    assert!(provisioner().check_provider(&ctx.provider_config).is_ok());
}

#[tokio::test]
async fn create_probes_and_kubeconfig_keeps_one_context() {
    let fake = FakeKube::start().await;
    fake.set_git_version("v1.33.4");
    let two_contexts = format!(
        "{}- name: other\n  context:\n    cluster: fake\n    user: admin\n",
        fake.admin_kubeconfig()
            .replace("current-context: fake\n", "")
            .replace("contexts:\n", "current-context: fake\ncontexts:\n")
    );
    let (mut ctx, mut rx) = ctx_with(&two_contexts);
    let p = provisioner();
    assert!(matches!(p.create(&mut ctx).await.unwrap(), Step::Done(())));
    let got = reports(&mut rx);
    assert!(
        matches!(&got[0], Report::Step(s) if s.contains(fake.url()) && s.contains("context fake")),
        "{got:?}"
    );
    assert!(got
        .iter()
        .any(|r| matches!(r, Report::Log(l) if l.contains("v1.33.4"))));

    let provisioned = p.kubeconfig(&mut ctx).await.unwrap();
    assert_eq!(provisioned.endpoint.as_deref(), Some(fake.url()));
    assert_eq!(provisioned.state["context"], "fake");
    assert_eq!(provisioned.state["server_version"], "v1.33.4");
    let text = String::from_utf8(provisioned.kubeconfig.expose().to_vec()).unwrap();
    assert!(!text.contains("other"), "only the chosen context:\n{text}");
    let parsed = parse_kubeconfig(&text, None, false).unwrap();
    assert_eq!(parsed.context(), "fake");

    // Resumed without create's checkpoint: the version is asked again.
    ctx.checkpoint = serde_json::Value::Null;
    let again = p.kubeconfig(&mut ctx).await.unwrap();
    assert_eq!(again.state["server_version"], "v1.33.4");
}

#[tokio::test]
async fn create_retries_an_unreachable_cluster_and_fails_a_refusing_one() {
    let p = provisioner();
    let fake = FakeKube::start().await;

    let refused = refused_url().await;
    let (mut ctx, _) = ctx_with(&fake.admin_kubeconfig().replace(fake.url(), &refused));
    let err = p.create(&mut ctx).await.unwrap_err();
    assert!(matches!(err, ProvisionError::Transient(_)), "{err:?}");

    fake.fail(Method::GET, "/version", 503);
    let (mut ctx, _) = ctx_with(&fake.admin_kubeconfig());
    let err = p.create(&mut ctx).await.unwrap_err();
    assert!(matches!(err, ProvisionError::Transient(_)), "{err:?}");

    fake.clear_failures();
    fake.fail(Method::GET, "/version", 403);
    let err = p.create(&mut ctx).await.unwrap_err();
    assert!(matches!(err, ProvisionError::Failed(_)), "{err:?}");
}

#[tokio::test]
async fn delete_only_forgets() {
    let fake = FakeKube::start().await;
    let (mut ctx, mut rx) = ctx_with(&fake.admin_kubeconfig());
    assert!(matches!(
        provisioner().delete(&mut ctx).await.unwrap(),
        Step::Done(())
    ));
    assert_eq!(
        reports(&mut rx),
        vec![Report::Step(
            "Forgetting the imported cluster; nothing is removed from it".into()
        )]
    );
    assert!(fake.requests().is_empty(), "the cluster is not touched");
}

// ----- Fuzzing the parser -----

const TOKEN: &str = "s3cr3t-t0ken-value";

fn valid_kubeconfig() -> String {
    let ca = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\npreferences: {{}}\nclusters:\n\
         - name: c1\n  cluster:\n    server: https://10.0.0.1:6443\n    \
         certificate-authority-data: {ca}\n- name: c2\n  cluster:\n    server: http://127.0.0.1:1\n\
         users:\n- name: u1\n  user:\n    token: {TOKEN}\n- name: u2\n  user:\n    username: a\n    \
         password: {TOKEN}\ncontexts:\n- name: prod\n  context:\n    cluster: c1\n    user: u1\n    \
         namespace: default\n- name: dev\n  context:\n    cluster: c2\n    user: u2\n"
    )
}

/// A valid kubeconfig with one edit: a byte range replaced by arbitrary text.
fn mutated() -> impl Strategy<Value = String> {
    let base = valid_kubeconfig();
    let len = base.len();
    (0..=len, 0..=64usize, ".{0,40}", any::<bool>()).prop_map(move |(at, cut, insert, lines)| {
        let mut s = base.clone();
        let at = (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        let end = (at + cut).min(s.len());
        let end = (end..=s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(s.len());
        let insert = if lines {
            insert.replace(' ', "\n")
        } else {
            insert
        };
        s.replace_range(at..end, &insert);
        s
    })
}

/// Whole lines of the valid kubeconfig shuffled, dropped or repeated.
fn reshuffled() -> impl Strategy<Value = String> {
    let lines: Vec<String> = valid_kubeconfig().lines().map(str::to_owned).collect();
    let n = lines.len();
    proptest::collection::vec(0..n, 0..(2 * n)).prop_map(move |picks| {
        picks
            .iter()
            .map(|i| lines[*i].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn check_never_panics(input: &str, context: Option<&str>, allow_exec: bool) {
    match parse_kubeconfig(input, context, allow_exec) {
        Ok(parsed) => {
            // What is kept parses again to the same thing.
            let kept = String::from_utf8(parsed.to_yaml().expose().to_vec()).unwrap();
            let again = parse_kubeconfig(&kept, None, allow_exec).unwrap();
            assert_eq!(again.server(), parsed.server());
            assert_eq!(again.context(), parsed.context());
            assert_eq!(again.auth_kind(), parsed.auth_kind());
            assert!(!format!("{parsed:?}").contains(TOKEN));
        }
        Err(e) => {
            assert!(e.field == "kubeconfig" || e.field == "context");
            // Unless a mutation moved the secret into a name (which messages may quote).
            let as_secret = input.matches(&format!("token: {TOKEN}\n")).count()
                + input.matches(&format!("password: {TOKEN}\n")).count();
            if input.matches(TOKEN).count() == as_secret {
                assert!(!e.message.contains(TOKEN), "a secret in: {}", e.message);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(input in ".{0,400}", exec in any::<bool>()) {
        check_never_panics(&input, None, exec);
    }

    #[test]
    fn arbitrary_yaml_shapes_never_panic(input in "[a-z:{}\\[\\]\\-,'\"&*!|> \n]{0,300}") {
        check_never_panics(&input, None, false);
    }

    #[test]
    fn mutated_kubeconfigs_never_panic(
        input in mutated(),
        context in proptest::option::of(prop_oneof![
            Just("prod".to_owned()), Just("dev".to_owned()), ".{0,10}"
        ]),
        exec in any::<bool>(),
    ) {
        check_never_panics(&input, context.as_deref(), exec);
    }

    #[test]
    fn reshuffled_kubeconfigs_never_panic(input in reshuffled()) {
        check_never_panics(&input, None, true);
    }
}

#[test]
fn the_valid_kubeconfig_is_valid() {
    let parsed = parse_kubeconfig(&valid_kubeconfig(), None, false).unwrap();
    assert_eq!(parsed.context(), "prod");
    assert_eq!(parsed.auth_kind(), AuthKind::Token);
    let dev = parse_kubeconfig(&valid_kubeconfig(), Some("dev"), false).unwrap();
    assert_eq!(dev.auth_kind(), AuthKind::Basic);
    assert_eq!(dev.server(), "http://127.0.0.1:1");
}

/// Accepted kubeconfigs also make clients without panicking (kube panics on some values
/// that a header cannot carry; the parser must refuse those first).
#[tokio::test]
async fn accepted_kubeconfigs_make_clients() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(200));
    let strategy = mutated();
    let mut accepted = Vec::new();
    for _ in 0..400 {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        if let Ok(parsed) = parse_kubeconfig(&input, None, false) {
            accepted.push(parsed);
        }
    }
    assert!(!accepted.is_empty());
    for parsed in accepted {
        // Building may fail (bad certificate bytes) but must not panic.
        let _ = client(&parsed, Duration::from_secs(1)).await;
    }
}
