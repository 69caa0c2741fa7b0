//! The access sweep through the running server: a cluster whose users still have the old
//! cluster-wide bindings is migrated without anyone downloading a new kubeconfig; namespaces
//! created since are bound; a template that gives tenant admins the whole cluster takes
//! effect at the next sweep, and is taken back the same way.

use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use kqueen_core::kubernetes::{binding_name, probe_version, service_account_name as sa};
use kqueen_testkit::fake_kube::FakeKube;
use kube::api::Api;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::clusters::{call, eventually, import_fake, my_kubeconfig, offer_import};
use crate::helpers::TestApp;

const CRB: &str = "apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

fn role_binding(ns: &str, user: &str) -> String {
    format!(
        "apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/{}",
        binding_name(&sa(user))
    )
}

fn cluster_binding(user: &str) -> String {
    format!("{CRB}/{}", binding_name(&sa(user)))
}

/// What the previous KQueen made for a user: `edit` bound cluster-wide, no RoleBindings.
async fn make_legacy(fake: &FakeKube, user: &str) {
    let admin = fake.admin_client();
    let rbs: Api<RoleBinding> = Api::namespaced(admin.clone(), "default");
    rbs.delete(&binding_name(&sa(user)), &Default::default())
        .await
        .unwrap();
    kqueen_testkit::legacy::cluster_binding(&admin, &sa(user)).await;
}

#[tokio::test]
async fn the_sweep_migrates_old_bindings_binds_new_namespaces_and_follows_the_template() {
    let fake = FakeKube::start().await;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let adam = app.user("adam", false, &[("team-a", "admin")]).await;
    offer_import(&app, &olga).await;
    let (id, _, _) = import_fake(&app, &amy, &fake).await;
    let amy_k = my_kubeconfig(&app, &amy, &id).await;
    my_kubeconfig(&app, &adam, &id).await;
    assert!(fake.object(&role_binding("default", "amy")).is_some());

    // A cluster from before, and a namespace created since.
    make_legacy(&fake, "amy").await;
    fake.insert("api/v1/namespaces", json!({"metadata": {"name": "team-b"}}));
    let sweep =
        || app.on_server(|s| async move { s.kqueen.access_sweep().sync_access().await.unwrap() });
    sweep().await;
    for user in ["amy", "adam"] {
        for ns in ["default", "team-b"] {
            assert!(
                fake.object(&role_binding(ns, user)).is_some(),
                "{user} in {ns}"
            );
        }
        assert!(fake.object(&role_binding("kube-system", user)).is_none());
    }
    assert!(fake.object(&cluster_binding("amy")).is_none(), "migrated");
    assert!(
        probe_version(&amy_k, Duration::from_secs(5)).await.is_ok(),
        "the kubeconfig amy already has keeps working"
    );
    let syncs = app
        .audit(kqueen_core::audit::AuditQuery {
            action: Some("access.sync".into()),
            ..Default::default()
        })
        .await;
    let details: Vec<String> = syncs
        .iter()
        .map(|e| format!("{} {}", e.actor, e.detail.clone().unwrap_or_default()))
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d.starts_with("system ") && d.contains("team-b")),
        "{details:?}"
    );
    assert!(
        details
            .iter()
            .any(|d| d.contains(&format!("cluster-wide binding(s) of {}", sa("amy")))),
        "{details:?}"
    );

    // A value that means nothing is refused, naming the field.
    let bad = json!({"name": "import", "provider": "existing", "admin_access": "root"});
    let (status, body) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/templates/import",
        Some(bad),
    )
    .await;
    assert!(status.is_client_error(), "{status} {body}");
    assert!(
        body["error"].as_str().unwrap().contains("admin_access"),
        "{body}"
    );
    let (_, template) = call(&olga, &app, Method::GET, "/api/v1/templates/import", None).await;
    assert_eq!(template["admin_access"], "namespaced", "{template}");

    // Only an operator may give tenant admins the whole cluster.
    let wide = json!({"name": "import", "provider": "existing", "admin_access": "cluster-admin"});
    let (status, _) = call(
        &adam,
        &app,
        Method::PUT,
        "/api/v1/templates/import",
        Some(wide.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/templates/import",
        Some(wide),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    sweep().await;
    eventually("adam gets cluster-admin", || {
        fake.object(&cluster_binding("adam"))
            .is_some_and(|b| b["roleRef"]["name"] == "cluster-admin")
    })
    .await;
    assert!(
        fake.object(&cluster_binding("amy")).is_none(),
        "members never"
    );
    assert!(fake.object(&role_binding("default", "amy")).is_some());
    let (_, cluster) = call(
        &amy,
        &app,
        Method::GET,
        &format!("/api/v1/clusters/{id}"),
        None,
    )
    .await;
    assert_eq!(cluster["admin_access"], "cluster-admin", "{cluster}");
    let (_, template) = call(&olga, &app, Method::GET, "/api/v1/templates/import", None).await;
    assert_eq!(template["admin_access"], "cluster-admin", "{template}");
    let updates = app
        .audit(kqueen_core::audit::AuditQuery {
            action: Some("template.update".into()),
            ..Default::default()
        })
        .await;
    assert!(
        updates.iter().any(|e| e.actor == "olga"
            && e.detail
                .as_deref()
                .unwrap_or_default()
                .contains("tenant admins: namespaced -> cluster-admin")),
        "{updates:?}"
    );

    // Back to namespaced: the cluster-wide binding goes at the next sweep.
    let narrow = json!({"name": "import", "provider": "existing", "admin_access": "namespaced"});
    let (status, body) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/templates/import",
        Some(narrow),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    sweep().await;
    eventually("adam loses cluster-admin", || {
        fake.object(&cluster_binding("adam")).is_none()
            && fake.object(&role_binding("default", "adam")).is_some()
    })
    .await;
    app.stop().await;
}
