//! Applications against a real kube-apiserver (with kube-controller-manager when named, but
//! without the Deployment and ReplicaSet controllers: the test plays them by patching a
//! Deployment's status). Two versions side by side, the dry-run diff, a re-deploy that
//! prunes, the member's own RBAC (a ClusterRoleBinding refused for an `edit` member and
//! allowed for a tenant admin of a `cluster-admin` template; a RoleBinding refused by the
//! cluster itself), rollout status, and a delete that leaves nothing.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use kqueen_core::audit::AuditQuery;
use kqueen_core::page::Page;
use kqueen_core::workloads::application::AppState;
use kqueen_core::workloads::apply::Change;
use kqueen_core::workloads::refs::{
    APPLICATION_LABEL, GROUP_KINDS_ANNOTATION, PART_OF_LABEL, TENANT_LABEL, VERSION_LABEL,
};
use kqueen_core::workloads::status::Rollout;
use kqueen_core::{Actor, DeployRequest, Error};
use kqueen_testkit::TestDatabase;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use support::world::{world, World};

fn shop(replicas: u32, with_settings: bool) -> String {
    let settings = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  \
                    color: blue\n---\n";
    format!(
        "{}apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    \
         app: web\n  ports:\n  - port: 80\n---\napiVersion: apps/v1\nkind: Deployment\n\
         metadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      \
         app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      \
         containers:\n      - name: web\n        image: nginx:1.27\n",
        if with_settings { settings } else { "" }
    )
}

fn request(version: &str, manifests: String) -> DeployRequest {
    DeployRequest {
        name: "shop".into(),
        version: version.into(),
        namespace: None,
        manifests,
    }
}

async fn deploy_and_run(w: &World, who: &Actor, req: &DeployRequest) -> uuid::Uuid {
    let (app, _op) = w.k.apps().deploy(who, &w.cluster, req).await.unwrap();
    w.engine.run_until_idle().await.unwrap();
    let app =
        w.k.apps()
            .status(who, &w.cluster, &app.id.to_string())
            .await
            .unwrap();
    if app.application.state != AppState::Deployed {
        let events =
            w.k.clusters()
                .cluster_events(who, &w.cluster, None)
                .await
                .unwrap();
        let lines: Vec<String> = events
            .iter()
            .map(|e| format!("{}: {}", e.kind, e.message))
            .collect();
        panic!(
            "{:?} {:?}; timeline:\n{}",
            app.application.state,
            app.application.error,
            lines.join("\n")
        );
    }
    app.application.id
}

async fn versions_side_by_side_diff_prune_and_delete(db: TestDatabase) {
    let Some(w) = world(db).await else { return };
    let apps = w.k.apps();

    // A first version: the namespace does not exist, everything is new.
    let preview = apps
        .preview(&w.alice, &w.cluster, &request("1.0", shop(1, true)))
        .await
        .unwrap();
    assert_eq!(preview.namespace, "shop-1-0");
    assert!(!preview.namespace_exists);
    assert!(
        preview.applied_as.contains("alice"),
        "{}",
        preview.applied_as
    );
    assert_eq!(preview.objects.len(), 3);
    assert!(preview.objects.iter().all(|o| o.change == Change::Created));
    let v1 = deploy_and_run(&w, &w.alice, &request("1.0", shop(1, true))).await;

    // What the cluster holds: labelled objects, an ApplySet parent, a labelled namespace.
    let cms: Api<ConfigMap> = Api::namespaced(w.admin.clone(), "shop-1-0");
    let settings = cms.get("settings").await.unwrap();
    let labels = settings.metadata.labels.unwrap();
    assert_eq!(labels[APPLICATION_LABEL], "shop");
    assert_eq!(labels[VERSION_LABEL], "1.0");
    assert_eq!(labels[TENANT_LABEL], "team-a");
    let set_id = labels[PART_OF_LABEL].clone();
    let parent = cms.get("kqueen-app-shop").await.unwrap();
    assert_eq!(
        parent.metadata.labels.unwrap()["applyset.kubernetes.io/id"],
        set_id
    );
    assert_eq!(
        parent.metadata.annotations.unwrap()[GROUP_KINDS_ANNOTATION],
        "ConfigMap,Deployment.apps,Service"
    );
    let deployments: Api<Deployment> = Api::namespaced(w.admin.clone(), "shop-1-0");
    let web = deployments.get("web").await.unwrap();
    let managers: Vec<String> = web
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.iter().any(|m| m == "kqueen"), "{managers:?}");

    // A second version beside it, in its own namespace.
    let v2 = deploy_and_run(&w, &w.alice, &request("2.0", shop(1, true))).await;
    let listed = apps.list(&w.alice, &w.cluster).await.unwrap();
    let versions: Vec<(&str, &str)> = listed
        .iter()
        .map(|a| (a.version.as_str(), a.namespace.as_str()))
        .collect();
    assert_eq!(versions, [("1.0", "shop-1-0"), ("2.0", "shop-2-0")]);
    Api::<Deployment>::namespaced(w.admin.clone(), "shop-2-0")
        .get("web")
        .await
        .unwrap();

    // A re-deploy of 1.0 with more replicas and without the ConfigMap: the diff says so.
    let preview = apps
        .preview(&w.alice, &w.cluster, &request("1.0", shop(3, false)))
        .await
        .unwrap();
    assert!(preview.namespace_exists);
    let by_kind = |kind: &str| {
        preview
            .objects
            .iter()
            .find(|o| o.object.kind == kind)
            .unwrap_or_else(|| panic!("{kind} in {:?}", preview.objects))
            .change
            .clone()
    };
    match by_kind("Deployment") {
        Change::Changed { fields } => {
            let replicas = fields.iter().find(|f| f.path == "spec.replicas").unwrap();
            assert_eq!(replicas.before.as_deref(), Some("1"));
            assert_eq!(replicas.after.as_deref(), Some("3"));
            assert_eq!(fields.len(), 1, "only the replicas change: {fields:?}");
        }
        other => panic!("the Deployment changes: {other:?}"),
    }
    assert_eq!(by_kind("Service"), Change::Unchanged);
    assert_eq!(by_kind("ConfigMap"), Change::Pruned);
    deploy_and_run(&w, &w.alice, &request("1.0", shop(3, false))).await;
    assert!(cms.get_opt("settings").await.unwrap().is_none(), "pruned");
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(3)
    );
    assert!(
        Api::<ConfigMap>::namespaced(w.admin.clone(), "shop-2-0")
            .get_opt("settings")
            .await
            .unwrap()
            .is_some(),
        "the other version keeps its own"
    );

    // Rollout status follows the Deployment as its controller reports it.
    let status = apps
        .status(&w.alice, &w.cluster, &v2.to_string())
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(status.workloads.len(), 1);
    assert_eq!(status.workloads[0].rollout, Rollout::Progressing);
    let generation = Api::<Deployment>::namespaced(w.admin.clone(), "shop-2-0")
        .get("web")
        .await
        .unwrap()
        .metadata
        .generation;
    Api::<Deployment>::namespaced(w.admin.clone(), "shop-2-0")
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"observedGeneration": generation, "replicas": 1,
                "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}}),
            ),
        )
        .await
        .unwrap();
    let status = apps
        .status(&w.alice, &w.cluster, &v2.to_string())
        .await
        .unwrap()
        .status
        .unwrap();
    let web = &status.workloads[0];
    assert_eq!((web.desired, web.ready, web.available), (1, 1, 1));
    assert_eq!(web.rollout, Rollout::Available);

    // Another tenant sees none of it.
    assert!(matches!(
        apps.list(&w.carol, &w.cluster).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        apps.delete(&w.carol, &w.cluster, &v2.to_string()).await,
        Err(Error::NotFound(_))
    ));

    // Deleting 2.0 removes its objects and its namespace, and nothing of 1.0.
    apps.delete(&w.alice, &w.cluster, &v2.to_string())
        .await
        .unwrap();
    w.engine.run_until_idle().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(w.admin.clone());
    let started = Instant::now();
    loop {
        match namespaces.get_opt("shop-2-0").await.unwrap() {
            None => break,
            Some(ns) => assert!(
                ns.metadata.deletion_timestamp.is_some(),
                "the namespace is being deleted"
            ),
        }
        if !w.server.has_controller_manager() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "namespace shop-2-0 not gone"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for ns in ["shop-2-0"] {
        let left = Api::<Service>::namespaced(w.admin.clone(), ns)
            .get_opt("web")
            .await
            .unwrap();
        assert!(left.is_none(), "the Service of 2.0 is gone");
    }
    assert!(deployments.get_opt("web").await.unwrap().is_some());
    let listed = apps.list(&w.alice, &w.cluster).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, v1);

    // Every deploy and delete is in the audit trail.
    let audit =
        w.k.audit()
            .audit_events(
                &Actor::cli(None),
                &AuditQuery {
                    action: Some("app.".into()),
                    ..Default::default()
                },
                Page::first(100),
            )
            .await
            .unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "app.deploy").count(),
        3,
        "{actions:?}"
    );
    assert!(actions.contains(&"app.delete"));
}

async fn members_deploy_with_their_own_rights(db: TestDatabase) {
    let Some(w) = world(db).await else { return };
    let apps = w.k.apps();
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
                   metadata:\n  name: shop-admin\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  \
                   kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  \
                   name: default\n  namespace: shop-1-0\n";
    let with_binding = format!("{}---\n{binding}", shop(1, false));

    // An `edit` member may not create cluster-scoped objects: refused before anything runs.
    let err = apps
        .deploy(&w.alice, &w.cluster, &request("1.0", with_binding.clone()))
        .await
        .unwrap_err();
    match err {
        Error::Invalid(v) => {
            assert!(v.message.contains("ClusterRoleBinding shop-admin"), "{v}");
            assert!(v.message.contains("cluster-scoped"), "{v}");
        }
        other => panic!("refused as invalid: {other:?}"),
    }

    // Inside their namespace the cluster's RBAC decides: `edit` cannot bind roles.
    deploy_and_run(&w, &w.alice, &request("1.0", shop(1, false))).await;
    let role_binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n\
                        metadata:\n  name: grab\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  \
                        kind: ClusterRole\n  name: admin\nsubjects:\n- kind: ServiceAccount\n  \
                        name: default\n";
    let err = apps
        .preview(
            &w.alice,
            &w.cluster,
            &request("1.0", format!("{}---\n{role_binding}", shop(1, false))),
        )
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("not allowed"), "{message}");
    assert!(message.contains("RoleBinding"), "{message}");

    // A tenant admin of a `cluster-admin` template may (the template's policy says so).
    let mut req = request("1.0", with_binding);
    req.name = "ops".into();
    let preview = apps.preview(&w.lead, &w.cluster, &req).await.unwrap();
    assert!(preview.applied_as.contains("lead"));
    let (app, _) = apps.deploy(&w.lead, &w.cluster, &req).await.unwrap();
    w.engine.run_until_idle().await.unwrap();
    let app = apps
        .status(&w.lead, &w.cluster, &app.id.to_string())
        .await
        .unwrap()
        .application;
    assert_eq!(app.state, AppState::Deployed, "{:?}", app.error);
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(w.admin.clone());
    assert!(bindings.get_opt("shop-admin").await.unwrap().is_some());
}

async fn hostile_manifests_get_clear_errors(db: TestDatabase) {
    let Some(w) = world(db).await else { return };
    let apps = w.k.apps();
    let cases = [
        (
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
            "kind Widget (example.com/v1) is not served by cluster prod",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: kube-system\n",
            "is in namespace kube-system",
        ),
        ("a: [1, 2", "line"),
        ("apiVersion: v1\nkind: ConfigMap\n", "metadata.name"),
        ("", "hold no object"),
    ];
    for (manifests, said) in cases {
        let err = apps
            .deploy(&w.alice, &w.cluster, &request("1.0", manifests.into()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Invalid(_)),
            "{manifests:?}: a 4xx, got {err:?}"
        );
        assert!(err.to_string().contains(said), "{manifests:?}: {err}");
    }
    let huge = "#".repeat(2 * 1024 * 1024);
    assert!(matches!(
        apps.deploy(&w.alice, &w.cluster, &request("1.0", huge))
            .await,
        Err(Error::Invalid(_))
    ));
    for (name, version, namespace) in [
        ("Shop", "1", None),
        ("shop", "1/2", None),
        ("shop", "1", Some("kube-system")),
    ] {
        let req = DeployRequest {
            name: name.into(),
            version: version.into(),
            namespace: namespace.map(str::to_owned),
            manifests: shop(1, false),
        };
        assert!(matches!(
            apps.deploy(&w.alice, &w.cluster, &req).await,
            Err(Error::Invalid(_))
        ));
    }
    // Nothing was queued or made.
    assert!(apps.list(&w.alice, &w.cluster).await.unwrap().is_empty());
    let namespaces: Api<Namespace> = Api::all(w.admin.clone());
    assert!(namespaces.get_opt("shop-1").await.unwrap().is_none());

    // A cluster that is not Ready (still provisioning: no worker ran its operation yet)
    // takes no deploy and no addon (refused as a conflict).
    let (down, _) =
        w.k.clusters()
            .request_cluster(
                &w.alice,
                kqueen_core::cluster::ClusterRequest {
                    tenant: Some("team-a".into()),
                    name: "down".into(),
                    template: "owned".into(),
                    parameters: [("kubeconfig".to_owned(), w.server.admin_kubeconfig())].into(),
                },
            )
            .await
            .unwrap();
    let down = down.id.to_string();
    let err = apps
        .deploy(&w.alice, &down, &request("1.0", shop(1, false)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert!(err.to_string().contains("Ready"), "{err}");
    let err =
        w.k.addons()
            .install(&w.alice, &down, "metrics-server", None, &Default::default())
            .await
            .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_run_side_by_side_and_redeploys_prune_on_sqlite() {
    versions_side_by_side_diff_prune_and_delete(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_run_side_by_side_and_redeploys_prune_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    versions_side_by_side_diff_prune_and_delete(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_deploy_with_their_own_rights_on_sqlite() {
    members_deploy_with_their_own_rights(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_manifests_get_clear_errors_on_sqlite() {
    hostile_manifests_get_clear_errors(TestDatabase::sqlite()).await;
}
