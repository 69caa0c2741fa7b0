//! What a personal kubeconfig may do in a cluster. Against a real kube-apiserver (with
//! kube-controller-manager when `KQUEEN_TEST_KUBE_CONTROLLER_MANAGER` is set), asked through
//! the SelfSubjectAccessReview API with the users' own kubeconfigs: members and tenant admins
//! get their role in ordinary namespaces only, never in kube-system or kqueen-users; new
//! namespaces are bound by the access sweep; old cluster-wide bindings are migrated; the
//! long-lived token Secrets of clusters before 1.24 are disarmed. The sweep's bookkeeping is
//! also checked against the in-process fake.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kqueen_core::cluster::AdminAccess;
use kqueen_core::identity::Role;
use kqueen_core::kubernetes::{
    binding_name, issue_user_kubeconfig, reconcile_access, service_account_name, ClusterEndpoint,
    Grant, IssuedKubeconfig, RoleMap, UserAccess, DISARMED_TOKEN, MANAGED_BY, MANAGED_BY_LABEL,
    USERS_NAMESPACE,
};
use kube::api::{Api, ListParams, PostParams};
use support::apiserver::RealApiServer;
use support::fake_kube::FakeKube;
use support::kube_client::client_of;

const HOUR: Duration = Duration::from_secs(3600);

async fn user_client(issued: &IssuedKubeconfig) -> kube::Client {
    client_of(issued.yaml.expose(), Duration::from_secs(10)).await
}

/// One question for `kubectl auth can-i`: verb, API group, resource, namespace.
#[derive(Debug, Clone, Copy)]
struct Ask(
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// The answer of the SelfSubjectAccessReview API to `ask`, as the client's user.
async fn can_i(user: &kube::Client, ask: Ask) -> bool {
    let Ask(verb, group, resource, namespace) = ask;
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_owned())),
        None => (resource, None),
    };
    let review = SelfSubjectAccessReview {
        metadata: ObjectMeta::default(),
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: namespace.map(str::to_owned),
                ..ResourceAttributes::default()
            }),
            non_resource_attributes: None,
        },
        status: None,
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(user.clone());
    let answer = api.create(&PostParams::default(), &review).await.unwrap();
    answer.status.is_some_and(|s| s.allowed)
}

/// Asks until the answer is `expected` (RBAC changes reach the authorizer through a cache
/// within a moment) and fails naming the question otherwise.
async fn expect(who: &str, user: &kube::Client, ask: Ask, expected: bool) {
    for _ in 0..40 {
        if can_i(user, ask).await == expected {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{who}: can-i {ask:?} should be {expected}");
}

async fn expect_all(who: &str, user: &kube::Client, asks: &[Ask], expected: bool) {
    for ask in asks {
        expect(who, user, *ask, expected).await;
    }
}

/// What no member may do anywhere: the system namespaces and the users' credentials.
const NEVER_FOR_MEMBERS: &[Ask] = &[
    Ask("get", "", "secrets", Some("kube-system")),
    Ask("list", "", "secrets", Some("kube-system")),
    Ask("get", "", "secrets", Some(USERS_NAMESPACE)),
    Ask("list", "", "secrets", Some(USERS_NAMESPACE)),
    Ask("create", "", "pods", Some("kube-system")),
    Ask("create", "apps", "deployments", Some("kube-system")),
    Ask("create", "", "pods", Some(USERS_NAMESPACE)),
    Ask("impersonate", "", "serviceaccounts", Some("kube-system")),
    Ask("impersonate", "", "serviceaccounts", Some(USERS_NAMESPACE)),
    Ask("impersonate", "", "users", None),
    Ask("impersonate", "", "groups", None),
    Ask("create", "", "serviceaccounts", Some(USERS_NAMESPACE)),
    Ask("create", "", "serviceaccounts/token", Some(USERS_NAMESPACE)),
    Ask("create", "", "serviceaccounts/token", Some("kube-system")),
    Ask(
        "create",
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
    ),
    Ask(
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings",
        Some("kube-system"),
    ),
    Ask(
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings",
        Some(USERS_NAMESPACE),
    ),
    Ask("delete", "", "namespaces", None),
    Ask("get", "", "secrets", Some("kube-public")),
];

/// What every user of the cluster may do.
const ALWAYS: &[Ask] = &[
    Ask("list", "", "nodes", None),
    Ask("get", "", "nodes", None),
    Ask("list", "", "namespaces", None),
    Ask("list", "storage.k8s.io", "storageclasses", None),
    Ask(
        "list",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    ),
    Ask("create", "", "namespaces", None),
];

/// An ordinary namespace, for members (`edit`).
fn member_work(ns: &'static str) -> Vec<Ask> {
    vec![
        Ask("create", "apps", "deployments", Some(ns)),
        Ask("get", "", "pods", Some(ns)),
        Ask("list", "", "pods", Some(ns)),
        Ask("create", "", "services", Some(ns)),
        Ask("get", "", "pods/log", Some(ns)),
    ]
}

async fn create_namespace(admin: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(admin.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns).await.unwrap();
}

/// One access sweep of the cluster for `grants` (with the default role map).
async fn sweep(
    admin: kube::Client,
    grants: &[Grant],
    access: AdminAccess,
) -> kqueen_core::kubernetes::AccessChanges {
    reconcile_access(admin, grants, &RoleMap::default(), access)
        .await
        .unwrap()
}

fn grant(username: &str, role: Role) -> Grant {
    Grant {
        username: username.into(),
        tenant: "acme".into(),
        role,
    }
}

#[tokio::test]
async fn personal_kubeconfigs_stay_out_of_system_namespaces_on_a_real_apiserver() {
    let Some(real) = RealApiServer::start().await else {
        return;
    };
    let ca = real.ca_data();
    let endpoint = ClusterEndpoint::new(real.url()).with_ca_data(Some(&ca));
    let admin = client_of(real.admin_kubeconfig().as_bytes(), Duration::from_secs(10)).await;
    create_namespace(&admin, "team-a").await;
    // An infrastructure namespace whose ServiceAccount holds cluster-wide rights (an ingress
    // controller's, say): running a pod as that account would give a member those rights.
    create_namespace(&admin, "ingress").await;
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), "ingress")
        .create(
            &PostParams::default(),
            &k8s_openapi::api::core::v1::ServiceAccount {
                metadata: ObjectMeta {
                    name: Some("controller".into()),
                    ..ObjectMeta::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    cluster_binding_of(
        &admin,
        "ingress-controller",
        "ingress",
        "controller",
        "view",
    )
    .await;

    // A member and a tenant admin download their kubeconfigs.
    let issue = |username: &str, role: Role, access: AdminAccess| {
        let mut req = UserAccess::new(username, "acme", role, HOUR);
        req.admin_access = access;
        let (admin, endpoint) = (admin.clone(), endpoint.clone());
        async move { issue_user_kubeconfig(admin, &endpoint, &req).await.unwrap() }
    };
    let mia = issue("mia", Role::Member, AdminAccess::Namespaced).await;
    assert!(mia.namespaces.contains(&"team-a".to_owned()));
    let ada = issue("ada", Role::Admin, AdminAccess::Namespaced).await;
    let (mia_c, ada_c) = (user_client(&mia).await, user_client(&ada).await);

    assert!(
        !mia.namespaces.contains(&"ingress".to_owned()),
        "{:?}",
        mia.namespaces
    );
    expect_all("member", &mia_c, NEVER_FOR_MEMBERS, false).await;
    expect_all("member", &mia_c, &member_work("ingress"), false).await;
    expect_all("member", &mia_c, ALWAYS, true).await;
    expect_all("member", &mia_c, &member_work("team-a"), true).await;
    expect_all("member", &mia_c, &member_work("default"), true).await;
    let member_is_not_admin = [
        Ask(
            "create",
            "rbac.authorization.k8s.io",
            "rolebindings",
            Some("team-a"),
        ),
        Ask(
            "create",
            "rbac.authorization.k8s.io",
            "roles",
            Some("team-a"),
        ),
    ];
    expect_all("member", &mia_c, &member_is_not_admin, false).await;
    // Not only the review: a real read of kube-system's secrets is refused.
    let secrets: Api<Secret> = Api::namespaced(mia_c.clone(), "kube-system");
    match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{s:?}"),
        other => panic!("a member listed kube-system's secrets: {other:?}"),
    }

    // The tenant admin: `admin` in ordinary namespaces, nothing more.
    expect_all("tenant admin", &ada_c, NEVER_FOR_MEMBERS, false).await;
    expect_all("tenant admin", &ada_c, ALWAYS, true).await;
    expect_all("tenant admin", &ada_c, &member_work("team-a"), true).await;
    expect_all("tenant admin", &ada_c, &member_is_not_admin, true).await;
    expect(
        "tenant admin",
        &ada_c,
        Ask("get", "", "secrets", Some("team-a")),
        true,
    )
    .await;

    // A member creates a namespace: not theirs until the sweep binds it.
    create_namespace(&mia_c, "team-b").await;
    let work_b = member_work("team-b");
    expect("member", &mia_c, work_b[0], false).await;
    let grants = [grant("mia", Role::Member), grant("ada", Role::Admin)];
    let changes = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert!(changes.bindings.bound_in.contains("team-b"), "{changes:?}");
    assert_eq!(changes.bindings.role_bindings_created, 2, "{changes:?}");
    expect_all("member", &mia_c, &work_b, true).await;
    expect_all("member", &mia_c, NEVER_FOR_MEMBERS, false).await;

    // A template that gives tenant admins the whole cluster: cluster-admin for them only.
    let cluster_wide = [
        Ask(
            "create",
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            None,
        ),
        Ask("get", "", "secrets", Some("kube-system")),
        Ask("create", "", "pods", Some("kube-system")),
    ];
    sweep(admin.clone(), &grants, AdminAccess::ClusterAdmin).await;
    expect_all("cluster-admin tenant admin", &ada_c, &cluster_wide, true).await;
    expect_all("member", &mia_c, &cluster_wide, false).await;
    // …and taken back when the template says otherwise.
    let changes = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert!(changes
        .bindings
        .cluster_bindings_removed
        .contains(&service_account_name("ada")));
    expect_all("tenant admin", &ada_c, &cluster_wide, false).await;
    expect_all("tenant admin", &ada_c, &member_work("team-a"), true).await;

    // A cluster from before: the old ClusterRoleBinding of `edit`. The sweep migrates it
    // and the kubeconfig the user already has keeps working.
    let leo = issue("leo", Role::Member, AdminAccess::Namespaced).await;
    let leo_c = user_client(&leo).await;
    let leo_sa = service_account_name("leo");
    let rbs: Api<RoleBinding> = Api::all(admin.clone());
    for rb in rbs
        .list(&ListParams::default().labels(&format!("kqueen.io/service-account={leo_sa}")))
        .await
        .unwrap()
    {
        let ns = rb.metadata.namespace.unwrap();
        Api::<RoleBinding>::namespaced(admin.clone(), &ns)
            .delete(&rb.metadata.name.unwrap(), &Default::default())
            .await
            .unwrap();
    }
    kqueen_testkit::legacy::cluster_binding(&admin, &leo_sa).await;
    expect(
        "legacy",
        &leo_c,
        Ask("list", "", "secrets", Some("kube-system")),
        true,
    )
    .await;
    let mut grants = grants.to_vec();
    grants.push(grant("leo", Role::Member));
    let changes = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert!(
        changes.bindings.cluster_bindings_removed.contains(&leo_sa),
        "{changes:?}"
    );
    let crbs: Api<ClusterRoleBinding> = Api::all(admin.clone());
    assert!(crbs
        .get_opt(&binding_name(&leo_sa))
        .await
        .unwrap()
        .is_none());
    expect_all("migrated", &leo_c, NEVER_FOR_MEMBERS, false).await;
    expect_all("migrated", &leo_c, &member_work("team-a"), true).await;

    // Before 1.24 the controller manager gives each ServiceAccount a long-lived token.
    if real.has_controller_manager() {
        long_lived_tokens_are_disarmed(&real, &admin, &grants).await;
    } else {
        println!("skipped the token Secret part: KQUEEN_TEST_KUBE_CONTROLLER_MANAGER not set");
    }

    // A second sweep finds nothing to do.
    let again = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert!(again.is_empty(), "{again:?}");
}

/// A ClusterRoleBinding of `role` to ServiceAccount `namespace/account`.
async fn cluster_binding_of(
    admin: &kube::Client,
    name: &str,
    namespace: &str,
    account: &str,
    role: &str,
) {
    let crbs: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".into(),
            name: account.into(),
            namespace: Some(namespace.into()),
        }]),
    };
    crbs.create(&PostParams::default(), &binding).await.unwrap();
}

/// The token Secrets the controller manager made for the users' ServiceAccounts.
async fn token_secrets(admin: &kube::Client) -> Vec<Secret> {
    let api: Api<Secret> = Api::namespaced(admin.clone(), USERS_NAMESPACE);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|s| s.type_.as_deref() == Some("kubernetes.io/service-account-token"))
        .collect()
}

async fn long_lived_tokens_are_disarmed(
    real: &RealApiServer,
    admin: &kube::Client,
    grants: &[Grant],
) {
    let mut secrets = Vec::new();
    for _ in 0..120 {
        secrets = token_secrets(admin).await;
        if secrets.len() >= grants.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        secrets.len() >= grants.len(),
        "the controller manager made no token Secrets: {}",
        real.controller_manager_log()
    );
    // Some may be disarmed already (issuance disarms what exists then); find a live one, or
    // re-arm one by hand as the controller would have left it.
    let live = secrets
        .iter()
        .filter_map(|s| s.data.as_ref()?.get("token"))
        .map(|t| String::from_utf8(t.0.clone()).unwrap())
        .find(|t| t != DISARMED_TOKEN);
    let Some(token) = live else {
        println!("every token Secret was already disarmed at issuance");
        return check_all_disarmed(admin).await;
    };
    let kubeconfig = real
        .admin_kubeconfig()
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("token:") {
                format!("    token: {token}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect::<String>();
    let stolen = client_of(kubeconfig.as_bytes(), Duration::from_secs(10)).await;
    let namespaces: Api<Namespace> = Api::all(stolen.clone());
    assert!(
        namespaces.list(&ListParams::default()).await.is_ok(),
        "the long-lived token works before the sweep"
    );
    let changes = sweep(admin.clone(), grants, AdminAccess::Namespaced).await;
    assert!(changes.tokens_disarmed >= 1, "{changes:?}");
    let mut rejected = false;
    for _ in 0..60 {
        match namespaces.list(&ListParams::default()).await {
            Err(kube::Error::Api(s)) if s.code == 401 => {
                rejected = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    assert!(rejected, "the disarmed long-lived token still works");
    // The controller leaves disarmed Secrets alone: no fresh token appears.
    tokio::time::sleep(Duration::from_secs(2)).await;
    check_all_disarmed(admin).await;
}

async fn check_all_disarmed(admin: &kube::Client) {
    for secret in token_secrets(admin).await {
        let token = secret
            .data
            .as_ref()
            .and_then(|d| d.get("token"))
            .map(|t| t.0.clone())
            .unwrap_or_default();
        assert_eq!(
            token,
            DISARMED_TOKEN.as_bytes(),
            "{:?} holds a token",
            secret.metadata.name
        );
    }
}

#[tokio::test]
async fn the_sweep_binds_open_namespaces_and_migrates_against_the_fake() {
    let fake = FakeKube::start().await;
    let admin = fake.admin_client();
    for (name, labels) in [
        ("team-a", serde_json::json!({})),
        ("kube-flannel", serde_json::json!({})),
        ("addon-x", serde_json::json!({MANAGED_BY_LABEL: MANAGED_BY})),
        (
            "ingress",
            serde_json::json!({"kqueen.io/tenant-access": "none"}),
        ),
        ("monitoring", serde_json::json!({})),
        (
            "opened",
            serde_json::json!({"kqueen.io/tenant-access": "open"}),
        ),
    ] {
        fake.insert(
            "api/v1/namespaces",
            serde_json::json!({"metadata": {"name": name, "labels": labels}}),
        );
    }
    // Their ServiceAccounts are bound cluster-wide: closed, unless an operator opened it.
    cluster_binding_of(&admin, "prometheus", "monitoring", "prometheus", "view").await;
    cluster_binding_of(&admin, "exporter", "opened", "exporter", "view").await;
    let endpoint = ClusterEndpoint::new(fake.url());
    issue_user_kubeconfig(
        admin.clone(),
        &endpoint,
        &UserAccess::new("mia", "acme", Role::Member, HOUR),
    )
    .await
    .unwrap();
    let mia = service_account_name("mia");
    let bound = |sa: &str| {
        let mut namespaces = Vec::new();
        for ns in [
            "default",
            "kube-system",
            "team-a",
            "team-b",
            "kube-flannel",
            "monitoring",
            "opened",
            "addon-x",
            "ingress",
            USERS_NAMESPACE,
        ] {
            let path = format!(
                "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/{}",
                binding_name(sa)
            );
            if fake.object(&path).is_some() {
                namespaces.push(ns.to_owned());
            }
        }
        namespaces
    };
    assert_eq!(bound(&mia), ["default", "team-a", "opened"]);

    // An old cluster-wide binding, a new namespace, a long-lived token Secret.
    kqueen_testkit::legacy::cluster_binding(&admin, &mia).await;
    fake.insert(
        "api/v1/namespaces",
        serde_json::json!({"metadata": {"name": "team-b"}}),
    );
    fake.insert(
        "api/v1/namespaces/kqueen-users/secrets",
        serde_json::json!({
            "metadata": {"name": format!("{mia}-token-abcde"),
                "annotations": {"kubernetes.io/service-account.name": mia}},
            "type": "kubernetes.io/service-account-token",
            "data": {"token": "ZXlKaGJHY2lPaUpTVXpJMU5pSjkuc2VjcmV0"},
        }),
    );
    let grants = [grant("mia", Role::Member)];
    let changes = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert_eq!(bound(&mia), ["default", "team-a", "team-b", "opened"]);
    assert_eq!(
        changes.bindings.bound_in.iter().collect::<Vec<_>>(),
        ["team-b"]
    );
    assert!(changes.bindings.cluster_bindings_removed.contains(&mia));
    assert_eq!(changes.tokens_disarmed, 1);
    assert!(
        changes.summary().contains("team-b")
            && changes.summary().contains("cluster-wide")
            && changes.summary().contains("disarmed 1"),
        "{}",
        changes.summary()
    );
    let secret = fake
        .object(&format!(
            "/api/v1/namespaces/kqueen-users/secrets/{mia}-token-abcde"
        ))
        .unwrap();
    assert_eq!(
        secret["data"]["token"],
        serde_json::json!(base64_of(DISARMED_TOKEN))
    );
    assert!(fake
        .object(&format!(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
            binding_name(&mia)
        ))
        .is_none());

    // Idempotent: a second pass writes nothing.
    let writes = |f: &FakeKube| {
        f.requests()
            .iter()
            .filter(|r| !r.starts_with("GET "))
            .count()
    };
    let before = writes(&fake);
    let again = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(writes(&fake), before, "{:?}", fake.requests());

    // A namespace an operator closes later loses the binding; a user without a record
    // whose ServiceAccount is gone loses theirs too.
    fake.insert(
        "api/v1/namespaces",
        serde_json::json!({"metadata": {"name": "team-b", "labels": {"kqueen.io/tenant-access": "none"}}}),
    );
    let changes = sweep(admin.clone(), &grants, AdminAccess::Namespaced).await;
    assert_eq!(changes.bindings.role_bindings_removed, 1, "{changes:?}");
    assert_eq!(bound(&mia), ["default", "team-a", "opened"]);
    let gone = sweep(admin.clone(), &[], AdminAccess::Namespaced).await;
    assert_eq!(
        gone.bindings.role_bindings_removed, 0,
        "mia's ServiceAccount still exists"
    );
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), USERS_NAMESPACE)
        .delete(&mia, &Default::default())
        .await
        .unwrap();
    let gone = sweep(admin, &[], AdminAccess::Namespaced).await;
    assert_eq!(gone.bindings.role_bindings_removed, 3, "{gone:?}");
    assert!(bound(&mia).is_empty());
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn a_tenant_admin_gets_cluster_admin_only_where_the_template_says_so() {
    let fake = FakeKube::start().await;
    let endpoint = ClusterEndpoint::new(fake.url());
    let crb = |user: &str| {
        fake.object(&format!(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
            binding_name(&service_account_name(user))
        ))
    };
    let mut req = UserAccess::new("ada", "acme", Role::Admin, HOUR);
    let namespaced = issue_user_kubeconfig(fake.admin_client(), &endpoint, &req)
        .await
        .unwrap();
    assert!(!namespaced.cluster_admin);
    assert!(crb("ada").is_none());

    req.admin_access = AdminAccess::ClusterAdmin;
    let wide = issue_user_kubeconfig(fake.admin_client(), &endpoint, &req)
        .await
        .unwrap();
    assert!(wide.cluster_admin);
    assert!(wide.namespaces.is_empty());
    assert_eq!(crb("ada").unwrap()["roleRef"]["name"], "cluster-admin");
    let rb = format!(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/{}",
        binding_name(&service_account_name("ada"))
    );
    assert!(
        fake.object(&rb).is_none(),
        "no namespaced binding beside cluster-admin"
    );

    // A member of such a template's cluster stays namespaced.
    let mut member = UserAccess::new("mia", "acme", Role::Member, HOUR);
    member.admin_access = AdminAccess::ClusterAdmin;
    let issued = issue_user_kubeconfig(fake.admin_client(), &endpoint, &member)
        .await
        .unwrap();
    assert!(!issued.cluster_admin);
    assert!(crb("mia").is_none());

    // The shared roles: read-only cluster objects and namespace creation, for the group.
    for name in ["kqueen:cluster-reader", "kqueen:namespace-creator"] {
        let role = fake
            .object(&format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"
            ))
            .unwrap();
        let verbs: Vec<&str> = role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["verbs"].as_array().unwrap())
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            verbs
                .iter()
                .all(|v| ["get", "list", "watch", "create"].contains(v)),
            "{name}: {verbs:?}"
        );
        let binding = fake
            .object(&format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}"
            ))
            .unwrap();
        assert_eq!(
            binding["subjects"][0]["name"],
            "system:serviceaccounts:kqueen-users"
        );
    }
}
