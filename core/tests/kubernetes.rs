//! Per-user access and the version probe against an in-process fake API server, and the
//! issuance scenario against a real kube-apiserver when `KQUEEN_TEST_KUBE_APISERVER` is set.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use axum::http::Method;
use chrono::Utc;
use kqueen_core::identity::Role;
use kqueen_core::kubernetes::{
    binding_name, client, issue_user_kubeconfig, parse_kubeconfig, probe_version,
    revoke_user_access, service_account_name, AccessError, AuthKind, ClusterEndpoint,
    IssuedKubeconfig, ProbeError, UserAccess, USERS_NAMESPACE,
};
use proptest::prelude::*;
use support::apiserver::RealApiServer;
use support::fake_kube::{refused_url, silent_server, FakeKube};

const HOUR: Duration = Duration::from_secs(3600);
const SA_PATH: &str = "api/v1/namespaces/kqueen-users/serviceaccounts";
const CRB_PATH: &str = "apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

async fn admin_client(kubeconfig: &str) -> kube::Client {
    let parsed = parse_kubeconfig(kubeconfig, None, false).unwrap();
    client(&parsed, Duration::from_secs(10)).await.unwrap()
}

fn yaml(issued: &IssuedKubeconfig) -> String {
    String::from_utf8(issued.yaml.expose().to_vec()).unwrap()
}

/// Probes `/version` with an issued kubeconfig.
async fn probe_issued(issued: &IssuedKubeconfig) -> Result<String, ProbeError> {
    let parsed = parse_kubeconfig(&yaml(issued), None, false).unwrap();
    probe_version(&parsed, Duration::from_secs(5)).await
}

/// The issuance scenario, shared by the fake and the real API server: first issuance, reuse,
/// role change, revocation.
async fn issuance_scenario(admin: kube::Client, server: &str, ca: Option<&str>) {
    let req = UserAccess::new("Alice.Smith@example.com", "acme", Role::Member, HOUR);
    let sa = service_account_name(&req.username);

    let first = issue_user_kubeconfig(
        admin.clone(),
        &ClusterEndpoint::new(server).with_ca_data(ca),
        &req,
    )
    .await
    .unwrap();
    assert_eq!(first.service_account, sa);
    let text = yaml(&first);
    let parsed = parse_kubeconfig(&text, None, false).unwrap();
    assert_eq!(parsed.server(), server);
    assert_eq!(parsed.auth_kind(), AuthKind::Token);
    assert_eq!(parsed.has_ca_data(), ca.is_some());
    assert!(text.contains("token: "), "a token user");
    assert!(text.contains("current-context: "));
    assert!(
        !format!("{first:?}").contains("token: "),
        "Debug hides the kubeconfig"
    );
    let left = first.expires_at - Utc::now();
    assert!(
        left > chrono::Duration::minutes(55) && left <= chrono::Duration::minutes(61),
        "expires in {left}"
    );
    assert!(
        probe_issued(&first).await.is_ok(),
        "the issued kubeconfig works"
    );

    let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(admin.clone(), USERS_NAMESPACE);
    let account = accounts.get(&sa).await.unwrap();
    let uid = account.metadata.uid.clone();
    let annotations = account.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("kqueen.io/username").map(String::as_str),
        Some("Alice.Smith@example.com")
    );
    assert_eq!(
        annotations.get("kqueen.io/tenant").map(String::as_str),
        Some("acme")
    );
    assert_eq!(
        account
            .metadata
            .labels
            .unwrap_or_default()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("kqueen")
    );
    // The role comes through a RoleBinding in each open namespace, never cluster-wide.
    assert!(!first.cluster_admin);
    assert!(
        first.namespaces.contains(&"default".to_owned()),
        "{:?}",
        first.namespaces
    );
    assert!(
        first
            .namespaces
            .iter()
            .all(|n| !n.starts_with("kube-") && n != USERS_NAMESPACE),
        "{:?}",
        first.namespaces
    );
    let bindings: kube::Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> =
        kube::Api::all(admin.clone());
    assert!(
        bindings
            .get_opt(&binding_name(&sa))
            .await
            .unwrap()
            .is_none(),
        "no cluster-wide binding of the user"
    );
    let role_binding = |ns: &str| {
        let api: kube::Api<k8s_openapi::api::rbac::v1::RoleBinding> =
            kube::Api::namespaced(admin.clone(), ns);
        let name = binding_name(&sa);
        async move { api.get_opt(&name).await.unwrap() }
    };
    let binding = role_binding("default").await.expect("a binding in default");
    assert_eq!(binding.role_ref.name, "edit");
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", sa.as_str())
    );
    assert_eq!(subject.namespace.as_deref(), Some(USERS_NAMESPACE));
    for closed in ["kube-system", USERS_NAMESPACE] {
        assert!(role_binding(closed).await.is_none(), "bound in {closed}");
    }

    // Again: the same ServiceAccount, a new token.
    let second = issue_user_kubeconfig(
        admin.clone(),
        &ClusterEndpoint::new(server).with_ca_data(ca),
        &req,
    )
    .await
    .unwrap();
    assert_eq!(accounts.get(&sa).await.unwrap().metadata.uid, uid);
    assert_ne!(yaml(&first), yaml(&second), "a fresh token");
    assert!(probe_issued(&second).await.is_ok());

    // Promoted to admin: the binding follows.
    let admin_req = UserAccess {
        role: Role::Admin,
        ..req.clone()
    };
    issue_user_kubeconfig(
        admin.clone(),
        &ClusterEndpoint::new(server).with_ca_data(ca),
        &admin_req,
    )
    .await
    .unwrap();
    let binding = role_binding("default").await.expect("a binding in default");
    assert_eq!(binding.role_ref.name, "admin");
    assert!(bindings
        .get_opt(&binding_name(&sa))
        .await
        .unwrap()
        .is_none());

    // Revoked: objects gone, tokens dead.
    assert!(revoke_user_access(admin.clone(), &req.username)
        .await
        .unwrap());
    assert!(accounts.get_opt(&sa).await.unwrap().is_none());
    assert!(role_binding("default").await.is_none());
    let mut rejected = None;
    for _ in 0..40 {
        match probe_issued(&second).await {
            Err(ProbeError::Http { status: 401, .. }) => {
                rejected = Some(());
                break;
            }
            // Real servers check ServiceAccounts through a cache: give it a moment.
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    assert!(rejected.is_some(), "the revoked token still works");
    assert!(!revoke_user_access(admin, &req.username).await.unwrap());
}

#[tokio::test]
async fn issuance_scenario_against_the_fake() {
    let fake = FakeKube::start().await;
    issuance_scenario(
        admin_client(&fake.admin_kubeconfig()).await,
        fake.url(),
        None,
    )
    .await;
    let posts = |path: &str| {
        let wanted = format!("POST /{path}");
        fake.requests().iter().filter(|r| **r == wanted).count()
    };
    assert_eq!(posts(SA_PATH), 1, "the ServiceAccount is created once");
    assert_eq!(
        posts("api/v1/namespaces"),
        1,
        "the namespace is created once"
    );
    assert_eq!(
        fake.count(
            "DELETE",
            "apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
        ),
        2,
        "the role change replaced the binding; the revocation removed it"
    );
    assert_eq!(
        fake.count("DELETE", CRB_PATH),
        2,
        "two revocations look for a cluster-wide binding"
    );
}

#[tokio::test]
async fn issuance_scenario_against_a_real_apiserver() {
    let Some(real) = RealApiServer::start().await else {
        return;
    };
    let ca = real.ca_data();
    issuance_scenario(
        admin_client(&real.admin_kubeconfig()).await,
        real.url(),
        Some(&ca),
    )
    .await;

    let parsed = parse_kubeconfig(&real.admin_kubeconfig(), None, false).unwrap();
    let version = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(version.starts_with('v'), "{version}");
    // Without the cluster's CA the server's certificate is not trusted.
    let without_ca: String = real
        .admin_kubeconfig()
        .lines()
        .filter(|l| !l.contains("certificate-authority-data"))
        .map(|l| format!("{l}\n"))
        .collect();
    let parsed = parse_kubeconfig(&without_ca, None, false).unwrap();
    let err = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProbeError::Tls { reason, .. } if reason.contains("trusted")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_issued_kubeconfig_carries_server_ca_and_context() {
    let fake = FakeKube::start().await;
    let admin = fake.admin_client();
    let mut req = UserAccess::new("bob", "acme", Role::Member, HOUR);
    req.context_name = Some("prod-eu".into());
    let ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";
    let issued = issue_user_kubeconfig(
        admin.clone(),
        &ClusterEndpoint::new(fake.url()).with_ca_data(Some(ca)),
        &req,
    )
    .await
    .unwrap();
    let parsed = parse_kubeconfig(&yaml(&issued), None, false).unwrap();
    assert_eq!(parsed.context(), "prod-eu");
    assert_eq!(parsed.ca_data(), Some(ca));

    let default_name = issue_user_kubeconfig(
        admin,
        &ClusterEndpoint::new(fake.url()),
        &UserAccess::new("bob", "acme", Role::Member, HOUR),
    )
    .await
    .unwrap();
    let parsed = parse_kubeconfig(&yaml(&default_name), None, false).unwrap();
    assert!(
        parsed.context().starts_with("kqueen-acme-127.0.0.1-"),
        "{}",
        parsed.context()
    );
}

#[tokio::test]
async fn the_cluster_may_shorten_the_token() {
    let fake = FakeKube::start().await;
    fake.set_max_token_seconds(3600);
    let req = UserAccess::new("carol", "acme", Role::Member, 24 * HOUR);
    let issued =
        issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
            .await
            .unwrap();
    assert!(issued.expires_at - Utc::now() <= chrono::Duration::minutes(61));
}

#[tokio::test]
async fn a_cluster_without_token_requests_cannot_issue() {
    let fake = FakeKube::start().await;
    fake.fail(Method::POST, "/token", 404);
    let req = UserAccess::new("dave", "acme", Role::Member, HOUR);
    let err = issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap_err();
    match &err {
        AccessError::Unsupported(reason) => assert!(reason.contains("TokenRequest"), "{reason}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert!(!err.is_transient());
}

#[tokio::test]
async fn forbidden_is_unsupported_and_server_errors_are_transient() {
    let fake = FakeKube::start().await;
    let req = UserAccess::new("erin", "acme", Role::Member, HOUR);

    fake.fail(Method::POST, "/serviceaccounts", 403);
    let err = issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AccessError::Unsupported(r) if r.contains("may not manage service accounts") && r.contains("403")),
        "{err:?}"
    );

    fake.clear_failures();
    fake.fail(Method::POST, "/token", 500);
    let err = issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err:?}");

    fake.clear_failures();
    fake.fail(Method::POST, "/token", 401);
    let err = issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AccessError::Unsupported(r) if r.contains("401")),
        "{err:?}"
    );

    let refused = refused_url().await;
    let kubeconfig = fake.admin_kubeconfig().replace(fake.url(), &refused);
    let err = issue_user_kubeconfig(
        admin_client(&kubeconfig).await,
        &ClusterEndpoint::new(&refused),
        &req,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, AccessError::Transient(r) if r.contains("connection refused")),
        "{err:?}"
    );
}

#[tokio::test]
async fn bad_requests_and_unknown_roles_are_refused() {
    let fake = FakeKube::start().await;
    let short = UserAccess::new("frank", "acme", Role::Member, Duration::from_secs(60));
    let err = issue_user_kubeconfig(
        fake.admin_client(),
        &ClusterEndpoint::new(fake.url()),
        &short,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AccessError::Invalid(ref v) if v.field == "ttl"),
        "{err:?}"
    );

    let mut custom = UserAccess::new("frank", "acme", Role::Member, HOUR);
    custom.role_map.member = "no-such-role".into();
    let err = issue_user_kubeconfig(
        fake.admin_client(),
        &ClusterEndpoint::new(fake.url()),
        &custom,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, AccessError::Unsupported(r) if r.contains("no-such-role")),
        "{err:?}"
    );
    assert!(
        fake.names(CRB_PATH).is_empty(),
        "no binding to a missing role"
    );
}

#[tokio::test]
async fn namespace_access_may_be_limited() {
    const NS: &str = "/api/v1/namespaces";
    const USERS_NS: &str = "/api/v1/namespaces/kqueen-users";
    let req = UserAccess::new("gina", "acme", Role::Member, HOUR);

    // May not create namespaces, but one was made for KQueen.
    let fake = FakeKube::start().await;
    fake.insert(
        "api/v1/namespaces",
        serde_json::json!({"metadata": {"name": USERS_NAMESPACE}}),
    );
    fake.fail_path(Method::POST, NS, 403);
    issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap();
    assert_eq!(fake.names(SA_PATH), vec![service_account_name("gina")]);

    // May not read namespaces, but may create one.
    let fake = FakeKube::start().await;
    fake.fail_path(Method::GET, USERS_NS, 403);
    issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap();
    assert_eq!(fake.names(SA_PATH), vec![service_account_name("gina")]);

    // Neither: said so.
    let fake = FakeKube::start().await;
    fake.fail_path(Method::GET, USERS_NS, 403);
    fake.fail_path(Method::POST, NS, 403);
    let err = issue_user_kubeconfig(fake.admin_client(), &ClusterEndpoint::new(fake.url()), &req)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AccessError::Unsupported(r) if r.contains("may not create namespaces")),
        "{err:?}"
    );
}

#[tokio::test]
async fn probe_reports_the_version() {
    let fake = FakeKube::start().await;
    fake.set_git_version("v1.34.1");
    let parsed = parse_kubeconfig(&fake.admin_kubeconfig(), None, false).unwrap();
    assert_eq!(
        probe_version(&parsed, Duration::from_secs(5))
            .await
            .unwrap(),
        "v1.34.1"
    );
}

#[tokio::test]
async fn probe_reports_http_errors() {
    let fake = FakeKube::start().await;
    fake.fail(Method::GET, "/version", 500);
    let parsed = parse_kubeconfig(&fake.admin_kubeconfig(), None, false).unwrap();
    let err = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProbeError::Http { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("HTTP 500"), "{err}");

    let wrong = fake
        .admin_kubeconfig()
        .replace(support::fake_kube::ADMIN_TOKEN, "wrong-token");
    let parsed = parse_kubeconfig(&wrong, None, false).unwrap();
    let err = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProbeError::Http { status: 401, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("rejected the credentials"),
        "{err}"
    );
    assert!(!err.to_string().contains("wrong-token"));
}

#[tokio::test]
async fn probe_times_out_on_a_silent_server() {
    let (url, _server) = silent_server().await;
    let fake = FakeKube::start().await;
    let kubeconfig = fake.admin_kubeconfig().replace(fake.url(), &url);
    let parsed = parse_kubeconfig(&kubeconfig, None, false).unwrap();
    let started = std::time::Instant::now();
    let err = probe_version(&parsed, Duration::from_millis(700))
        .await
        .unwrap_err();
    assert!(matches!(err, ProbeError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        err.to_string()
            .contains("did not answer /version within 0.7 s"),
        "{err}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn probe_reports_refused_connections_and_tls_failures() {
    let fake = FakeKube::start().await;
    let refused = refused_url().await;
    let kubeconfig = fake.admin_kubeconfig().replace(fake.url(), &refused);
    let parsed = parse_kubeconfig(&kubeconfig, None, false).unwrap();
    let err = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProbeError::Connect { reason, .. } if reason == "connection refused"),
        "{err:?}"
    );

    // https:// to a server that speaks plain HTTP.
    let https = fake.url().replace("http://", "https://");
    let kubeconfig = fake.admin_kubeconfig().replace(fake.url(), &https);
    let parsed = parse_kubeconfig(&kubeconfig, None, false).unwrap();
    let err = probe_version(&parsed, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(err, ProbeError::Tls { .. }), "{err:?}");
    assert!(!err.to_string().contains(support::fake_kube::ADMIN_TOKEN));
}

proptest! {
    #[test]
    fn service_account_names_are_dns_labels(a in ".{0,80}", b in ".{0,80}") {
        for name in [service_account_name(&a), service_account_name(&b)] {
            prop_assert!(!name.is_empty() && name.len() <= 63, "{name}");
            prop_assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{name}");
            prop_assert!(name.starts_with(|c: char| c.is_ascii_alphanumeric()), "{name}");
            prop_assert!(name.ends_with(|c: char| c.is_ascii_alphanumeric()), "{name}");
        }
        if a != b {
            prop_assert_ne!(service_account_name(&a), service_account_name(&b));
        }
    }
}

#[test]
fn similar_usernames_get_different_accounts() {
    let names = ["a.b", "a-b", "A-B", "a_b", "a b"].map(service_account_name);
    for (i, x) in names.iter().enumerate() {
        for y in &names[i + 1..] {
            assert_ne!(x, y);
        }
        assert!(x.starts_with("a-b-"), "{x}");
    }
}
