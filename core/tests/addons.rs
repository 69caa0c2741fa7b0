//! Addons against a real kube-apiserver 1.20 (see `support::world`): a catalog addon toggled
//! on and off (nothing left), its health from its rule (the test plays the Deployment
//! controller), drift when the test edits an owned object, an upgrade to a newer catalog
//! version (pruning what the new version dropped), the built-in metrics-server applied and
//! removed for real (its APIService included), an addon someone else installed shown as
//! present and left alone, dependencies, the fleet's view and a bulk upgrade, and who may
//! do what.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kqueen_core::workloads::addons::installed::InstallState;
use kqueen_core::workloads::addons::state::AddonState;
use kqueen_core::workloads::addons::{AddonDefinition, AddonParam, HealthRule, WellKnown};
use kqueen_core::workloads::refs::ADDON_LABEL;
use kqueen_core::{ClusterAddonView, Error};
use kqueen_testkit::TestDatabase;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use support::world::{world, World};

fn demo(version: &str, with_config: bool) -> AddonDefinition {
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-settings\ndata:\n  \
                  level: info\n---\n";
    AddonDefinition {
        name: "demo".into(),
        version: version.into(),
        description: "A demo addon".into(),
        namespace: "demo-system".into(),
        parameters: vec![AddonParam::integer("replicas", "1", 1, 3)],
        health: HealthRule {
            workloads: vec![WellKnown {
                kind: "Deployment".into(),
                namespace: "demo-system".into(),
                name: "demo".into(),
            }],
            api_services: vec![],
        },
        requires: vec![],
        detect: vec![],
        manifests: format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo-system\n---\n{}\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  \
             name: demo:reader\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\nspec:\n  \
             replicas: ${{replicas}}\n  selector:\n    matchLabels: {{app: demo}}\n  template:\n    \
             metadata:\n      labels: {{app: demo}}\n    spec:\n      containers:\n      \
             - name: demo\n        image: registry.k8s.io/pause:{version}\n",
            if with_config { config } else { "" }
        ),
        builtin: false,
    }
}

async fn view(w: &World, name: &str) -> ClusterAddonView {
    w.k.addons()
        .for_cluster(&w.alice, &w.cluster)
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.name == name)
        .unwrap()
}

async fn run(w: &World) {
    w.engine.run_until_idle().await.unwrap();
}

async fn addons_toggle_drift_health_upgrade(db: TestDatabase) {
    let Some(w) = world(db).await else { return };
    let addons = w.k.addons();
    addons.define(&w.ops, demo("1.0.0", true)).await.unwrap();
    // Members may not define addons.
    assert!(matches!(
        addons.define(&w.alice, demo("9.0.0", true)).await,
        Err(Error::Forbidden)
    ));
    let v = view(&w, "demo").await;
    assert_eq!(v.state, AddonState::NotInstalled);
    assert_eq!(v.versions, ["1.0.0"]);
    let names: Vec<String> = addons
        .for_cluster(&w.alice, &w.cluster)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    for builtin in [
        "cert-manager",
        "ingress-nginx",
        "kubernetes-dashboard",
        "metrics-server",
    ] {
        assert!(names.iter().any(|n| n == builtin), "{builtin} in {names:?}");
    }

    // On: a member toggles it, the engine applies it.
    let params: BTreeMap<String, String> = [("replicas".to_owned(), "2".to_owned())].into();
    addons
        .install(&w.alice, &w.cluster, "demo", None, &params)
        .await
        .unwrap();
    assert_eq!(view(&w, "demo").await.state, AddonState::Installing);
    run(&w).await;
    let v = view(&w, "demo").await;
    let installed = v.installed.clone().unwrap();
    assert_eq!(
        installed.state,
        InstallState::Installed,
        "{:?}",
        installed.error
    );
    assert_eq!(installed.parameters["replicas"], "2");
    // Applied, not available yet: installing, and the reason says which workload.
    assert_eq!(v.state, AddonState::Installing, "{:?}", v.reason);
    assert!(
        v.reason
            .clone()
            .unwrap()
            .contains("Deployment demo-system/demo: 0/2"),
        "{:?}",
        v.reason
    );
    let deployments: Api<Deployment> = Api::namespaced(w.admin.clone(), "demo-system");
    let d = deployments.get("demo").await.unwrap();
    assert_eq!(d.metadata.labels.unwrap()[ADDON_LABEL], "demo");
    assert_eq!(d.spec.unwrap().replicas, Some(2));

    // Health follows the rule: the test reports the Deployment available.
    let generation = deployments.get("demo").await.unwrap().metadata.generation;
    deployments
        .patch_status(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"observedGeneration": generation, "replicas": 2,
                "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}}),
            ),
        )
        .await
        .unwrap();
    let v = view(&w, "demo").await;
    assert_eq!(v.state, AddonState::Healthy, "{:?}", v.reason);

    // Drift: someone scales the Deployment behind KQueen's back.
    deployments
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    let v = view(&w, "demo").await;
    assert_eq!(v.state, AddonState::Drifted);
    let reason = v.reason.unwrap();
    assert!(reason.contains("Deployment demo-system/demo"), "{reason}");
    assert!(reason.contains("spec.replicas 3 → 2"), "{reason}");
    // And someone deletes an owned object: drifted too.
    let configs: Api<ConfigMap> = Api::namespaced(w.admin.clone(), "demo-system");
    configs
        .delete("demo-settings", &Default::default())
        .await
        .unwrap();
    let reason = view(&w, "demo").await.reason.unwrap();
    assert!(
        reason.contains("ConfigMap demo-system/demo-settings is missing"),
        "{reason}"
    );

    // A newer catalog version: offered as an upgrade; the upgrade applies it, keeps the
    // parameters and prunes what the new version dropped.
    addons.define(&w.ops, demo("1.1.0", false)).await.unwrap();
    let v = view(&w, "demo").await;
    assert_eq!(v.upgrade_available.as_deref(), Some("1.1.0"));
    assert_eq!(v.versions, ["1.1.0", "1.0.0"]);
    configs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "demo-settings",
                "labels": {"applyset.kubernetes.io/part-of": applyset_of(&w).await}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    addons
        .install(
            &w.alice,
            &w.cluster,
            "demo",
            Some("1.1.0"),
            &BTreeMap::new(),
        )
        .await
        .unwrap();
    run(&w).await;
    let v = view(&w, "demo").await;
    let installed = v.installed.unwrap();
    assert_eq!(installed.version, "1.1.0");
    assert_eq!(installed.parameters["replicas"], "2", "parameters kept");
    assert_eq!(v.upgrade_available, None);
    assert!(
        configs.get_opt("demo-settings").await.unwrap().is_none(),
        "pruned"
    );
    let image = deployments
        .get("demo")
        .await
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("registry.k8s.io/pause:1.1.0"));

    // Off: everything it applied goes, nothing else.
    addons.remove(&w.alice, &w.cluster, "demo").await.unwrap();
    run(&w).await;
    assert_eq!(view(&w, "demo").await.state, AddonState::NotInstalled);
    let roles: Api<ClusterRole> = Api::all(w.admin.clone());
    assert!(roles.get_opt("demo:reader").await.unwrap().is_none());
    let ns: Api<Namespace> = Api::all(w.admin.clone());
    let left = ns.get_opt("demo-system").await.unwrap();
    assert!(
        left.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the addon's namespace goes"
    );
    assert!(ns.get_opt("kube-system").await.unwrap().is_some());

    // The audit trail has every toggle.
    let audit =
        w.k.audit()
            .audit_events(
                &w.ops,
                &kqueen_core::audit::AuditQuery {
                    action: Some("addon.".into()),
                    ..Default::default()
                },
                kqueen_core::page::Page::first(100),
            )
            .await
            .unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    for a in [
        "addon.define",
        "addon.install",
        "addon.upgrade",
        "addon.remove",
    ] {
        assert!(actions.contains(&a), "{a} in {actions:?}");
    }
}

async fn applyset_of(w: &World) -> String {
    Api::<ConfigMap>::namespaced(w.admin.clone(), "demo-system")
        .get("kqueen-addon-demo")
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap()["applyset.kubernetes.io/id"]
        .clone()
}

async fn builtin_metrics_server_and_unmanaged_addons(db: TestDatabase) {
    let Some(w) = world(db).await else { return };
    let addons = w.k.addons();

    // The built-in metrics-server applies for real on 1.20 (its APIService included).
    addons
        .install(
            &w.alice,
            &w.cluster,
            "metrics-server",
            None,
            &BTreeMap::new(),
        )
        .await
        .unwrap();
    run(&w).await;
    let v = view(&w, "metrics-server").await;
    assert_eq!(
        v.installed.clone().unwrap().state,
        InstallState::Installed,
        "{:?}",
        v.installed.unwrap().error
    );
    assert!(
        matches!(v.state, AddonState::Installing | AddonState::Degraded),
        "{:?}: {:?}",
        v.state,
        v.reason
    );
    let services = kube::core::ApiResource {
        group: "apiregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiregistration.k8s.io/v1".into(),
        kind: "APIService".into(),
        plural: "apiservices".into(),
    };
    let apis: Api<kube::api::DynamicObject> = Api::all_with(w.admin.clone(), &services);
    assert!(apis
        .get_opt("v1beta1.metrics.k8s.io")
        .await
        .unwrap()
        .is_some());
    let system: Api<Deployment> = Api::namespaced(w.admin.clone(), "kube-system");
    assert!(system.get_opt("metrics-server").await.unwrap().is_some());
    addons
        .remove(&w.alice, &w.cluster, "metrics-server")
        .await
        .unwrap();
    run(&w).await;
    assert_eq!(
        view(&w, "metrics-server").await.state,
        AddonState::NotInstalled
    );
    assert!(apis
        .get_opt("v1beta1.metrics.k8s.io")
        .await
        .unwrap()
        .is_none());
    assert!(system.get_opt("metrics-server").await.unwrap().is_none());
    let roles: Api<ClusterRole> = Api::all(w.admin.clone());
    assert!(roles
        .get_opt("system:metrics-server")
        .await
        .unwrap()
        .is_none());

    // ingress-nginx installed by someone else: present, unmanaged, left alone.
    let ns: Api<Namespace> = Api::all(w.admin.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "ingress-nginx"}})).unwrap(),
    )
    .await
    .unwrap();
    Api::<Deployment>::namespaced(w.admin.clone(), "ingress-nginx")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ingress-nginx-controller", "labels": {"app.kubernetes.io/managed-by": "Helm"}},
                "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        view(&w, "ingress-nginx").await.state,
        AddonState::PresentUnmanaged
    );
    let err = addons
        .install(
            &w.alice,
            &w.cluster,
            "ingress-nginx",
            None,
            &BTreeMap::new(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("installed without KQueen"),
        "{err}"
    );

    // Dependencies: an addon needing demo waits for it.
    let mut needy = demo("1.0.0", false);
    needy.name = "needy".into();
    needy.namespace = "needy".into();
    needy.manifests =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\n  namespace: default\n".into();
    needy.requires = vec!["demo".into()];
    needy.health = HealthRule::default();
    needy.parameters.clear();
    addons.define(&w.ops, needy).await.unwrap();
    let err = addons
        .install(&w.alice, &w.cluster, "needy", None, &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs demo"), "{err}");

    // Wrong input and wrong people.
    let bad: BTreeMap<String, String> = [("replicas".to_owned(), "99".to_owned())].into();
    addons.define(&w.ops, demo("1.0.0", true)).await.unwrap();
    assert!(matches!(
        addons
            .install(&w.alice, &w.cluster, "demo", None, &bad)
            .await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        addons
            .install(&w.alice, &w.cluster, "demo", Some("7.0"), &BTreeMap::new())
            .await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        addons
            .install(&w.carol, &w.cluster, "demo", None, &BTreeMap::new())
            .await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        addons.for_cluster(&w.carol, &w.cluster).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        addons.remove(&w.carol, &w.cluster, "demo").await,
        Err(Error::NotFound(_))
    ));

    // The fleet: which version runs where; a bulk upgrade by an operator.
    addons
        .install(&w.alice, &w.cluster, "demo", None, &BTreeMap::new())
        .await
        .unwrap();
    run(&w).await;
    addons.define(&w.ops, demo("1.1.0", true)).await.unwrap();
    let fleet = addons.fleet(&w.ops).await.unwrap();
    let (row, newer) = fleet.iter().find(|(r, _)| r.addon.name == "demo").unwrap();
    assert_eq!(row.addon.version, "1.0.0");
    assert_eq!(row.cluster_name, "prod");
    assert_eq!(newer.as_deref(), Some("1.1.0"));
    assert!(matches!(
        addons.fleet(&w.alice).await,
        Err(Error::Forbidden)
    ));
    assert!(addons
        .fleet(&w.lead)
        .await
        .unwrap()
        .iter()
        .any(|(r, _)| r.addon.name == "demo"));
    assert!(matches!(
        addons.bulk_upgrade(&w.lead, "demo", "1.1.0", &[]).await,
        Err(Error::Forbidden)
    ));
    let done = addons
        .bulk_upgrade(&w.ops, "demo", "1.1.0", &[])
        .await
        .unwrap();
    assert_eq!(done.len(), 1);
    assert!(done[0].result.is_ok(), "{:?}", done[0].result);
    run(&w).await;
    assert_eq!(view(&w, "demo").await.installed.unwrap().version, "1.1.0");
    // A catalog version a cluster runs cannot be removed.
    assert!(matches!(
        addons.undefine(&w.ops, "demo", "1.1.0").await,
        Err(Error::Conflict(_))
    ));
    addons.undefine(&w.ops, "demo", "1.0.0").await.unwrap();
    let err = addons
        .undefine(&w.ops, "metrics-server", "0.7.2")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("built into KQueen"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addons_toggle_and_follow_health_drift_and_upgrades_on_sqlite() {
    addons_toggle_drift_health_upgrade(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addons_toggle_and_follow_health_drift_and_upgrades_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    addons_toggle_drift_health_upgrade(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_and_unmanaged_addons_dependencies_and_the_fleet_on_sqlite() {
    builtin_metrics_server_and_unmanaged_addons(TestDatabase::sqlite()).await;
}
