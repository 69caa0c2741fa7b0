//! The `cluster-api` provisioner against a real kube-apiserver as the management cluster
//! (`KQUEEN_TEST_KUBE_APISERVER`), with minimal Cluster API CRDs and a test controller that
//! plays Cluster API (`kqueen_testkit::capi`): it moves conditions along, creates Machines and
//! writes the kubeconfig Secret — pointing at a real hosted control plane that KQueen's own
//! `hosted` provisioner runs, so the clusters KQueen then manages, inventories and hands
//! personal kubeconfigs for are real.
//!
//! - A member requests a cluster (v1beta2 served): the Cluster is applied with the
//!   template's parameters, followed to Ready; scale and upgrade change the topology and
//!   are followed on the Machines; a dead node's Machine is replaced; an existing Cluster is adopted into the tenant and
//!   inventoried; delete waits until Cluster API has removed the Cluster.
//! - On a management cluster serving v1beta1 only: the CRDs missing (named), a Cluster that
//!   Cluster API fails, one stuck (timeout with the last condition's message), one without
//!   its kubeconfig Secret, one with a bad one; and an unreachable management cluster.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kqueen_core::cluster::{ClusterRequest, ClusterState, TemplateInput};
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::provisioner::cluster_api::{ClusterApiOptions, ClusterApiProvisioner};
use kqueen_core::provisioner::hosted::{HostedOptions, HostedProvisioner};
use kqueen_core::provisioner::Registry;
use kqueen_core::{Actor, AdoptRequest, Kqueen};
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::capi::{self, FakeCapi, Served};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use support::capi::{client_of, cluster_json, clusters_api, events_of, machines_of};
use support::converge::converge;

const APISERVER: &str = "KQUEEN_TEST_KUBE_APISERVER";
const CONTROLLER_MANAGER: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register(Arc::new(HostedProvisioner::new(HostedOptions::default())));
    registry.register(Arc::new(ClusterApiProvisioner::new(ClusterApiOptions {
        poll: Duration::from_millis(100),
    })));
    registry
}

#[tokio::test]
async fn a_member_gets_a_cluster_api_cluster_scales_upgrades_adopts_and_deletes() {
    let (Ok(apiserver), Ok(cm)) = (std::env::var(APISERVER), std::env::var(CONTROLLER_MANAGER))
    else {
        println!("skipped: {APISERVER} and {CONTROLLER_MANAGER} name the real binaries");
        return;
    };
    let management = RealApiServer::start().await.unwrap();
    let mgmt = client_of(&management.admin_kubeconfig()).await;
    capi::install_crds(&mgmt, Served::Both).await.unwrap();
    capi::create_cluster_class(&mgmt, "default", "quick-start", Served::Both)
        .await
        .unwrap();

    let db = kqueen_testkit::TestDatabase::sqlite();
    let work = tempfile::tempdir().unwrap();
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_registry(registry())
        .with_group_map(GroupMap::parse("team-a=team-a:member,team-b=team-b:member").unwrap());
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let bob = kqueen_testkit::people::login(&k, "bob", "team-b").await;
    let ops = Actor::cli(Some("ops".into()));
    let mut config = EngineConfig::new(work.path().join("clusters"));
    config.poll_interval = Duration::from_millis(50);
    let engine = k.engine(config);

    // A real control plane for Cluster API's clusters to be: a hosted one.
    let etcd = TlsEtcd::start().await;
    let mut settings = etcd.provider_settings();
    settings.push(("versions", format!("1.20 {apiserver} {cm}\n")));
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    kqueen_testkit::catalog::offer(&k, &ops, ("hosted", "shared", &settings), ("hosted", "")).await;
    let (workload, _) = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "workload".into(),
                template: "hosted".into(),
                parameters: [("kubernetes_version".to_owned(), "1.20".to_owned())].into(),
            },
        )
        .await
        .unwrap();
    let _guard = kqueen_testkit::process::KillOnDrop(
        work.path()
            .join("clusters")
            .join(workload.id.to_string())
            .join("run"),
    );
    converge(
        &k,
        &engine,
        &workload.id.to_string(),
        Some(ClusterState::Ready),
    )
    .await;
    let hosted_kubeconfig = k
        .access()
        .admin_kubeconfig(&ops, &workload.id.to_string())
        .await
        .unwrap();
    let fake = FakeCapi::start(mgmt.clone(), Served::Both, Duration::from_millis(100));
    fake.set_kubeconfig(String::from_utf8(hosted_kubeconfig.yaml.expose().to_vec()).unwrap());

    // The operator: a Cluster API provider and a template that lets tenants choose the
    // version (two offered), the workers (up to 3) and the machine flavor.
    let mgmt_kubeconfig = management.admin_kubeconfig();
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        (
            "cluster-api",
            "capi",
            &[
                ("management_kubeconfig", mgmt_kubeconfig.as_str()),
                ("cluster_class", "quick-start"),
                ("flavor_variable", "flavor"),
                ("region_variable", "region"),
            ],
        ),
        (
            "capi-small",
            r#"{"kubernetes_version": {"options": ["v1.30.0", "v1.31.0"]},
                "node_count": {"max": 3}, "region": {"fixed": "eu-west-1"}}"#,
        ),
    )
    .await;

    // A member asks; a flavor is passed through as the pool's variable override.
    let (cluster, _) = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "dev".into(),
                template: "capi-small".into(),
                parameters: [
                    ("kubernetes_version".to_owned(), "v1.30.0".to_owned()),
                    ("node_count".to_owned(), "1".to_owned()),
                    ("machine_flavor".to_owned(), "small".to_owned()),
                ]
                .into(),
            },
        )
        .await
        .unwrap();
    let id = cluster.id.to_string();
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;

    // What KQueen wrote: the topology, owned by field manager kqueen (server-side apply).
    let object = cluster_json(&mgmt, "v1beta2", "team-a-dev").await.unwrap();
    let topology = &object["spec"]["topology"];
    assert_eq!(topology["classRef"]["name"], "quick-start");
    assert_eq!(topology["version"], "v1.30.0");
    assert_eq!(topology["controlPlane"]["replicas"], 1);
    let pool = &topology["workers"]["machineDeployments"][0];
    assert_eq!(pool["replicas"], 1);
    assert_eq!(
        pool["variables"]["overrides"][0],
        json!({"name": "flavor", "value": "small"})
    );
    assert_eq!(
        topology["variables"],
        json!([{"name": "region", "value": "eu-west-1"}])
    );
    assert_eq!(object["metadata"]["labels"]["kqueen.io/cluster"], id);
    assert_eq!(object["metadata"]["labels"]["kqueen.io/tenant"], "team-a");
    let managers: Vec<(&str, &str)> = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap(),
                m["operation"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(managers.contains(&("kqueen", "Apply")), "{managers:?}");

    // Each condition change is in the timeline, and the milestones as steps.
    let events = events_of(&k, &id).await;
    for expected in [
        "Writing the Cluster default/team-a-dev (cluster.x-k8s.io/v1beta2)",
        "Condition InfrastructureReady is True",
        "Condition ControlPlaneInitialized is True",
        "Condition ControlPlaneAvailable is True",
        "Fetching the kubeconfig",
    ] {
        assert!(
            events.iter().any(|e| e.starts_with(expected)),
            "no '{expected}' in {events:#?}"
        );
    }
    // The milestones before the control plane was available, however fast they went.
    let milestones = [
        "Provisioning the infrastructure",
        "Initializing the control plane",
        "Waiting for the control plane to be available",
    ];
    assert!(
        events
            .iter()
            .any(|e| milestones.iter().any(|m| e.starts_with(m))),
        "{events:#?}"
    );

    // The member's personal kubeconfig reaches the real cluster; another tenant sees nothing.
    let mine = k.access().kubeconfig(&alice, &id).await.unwrap();
    let mine = client_of(std::str::from_utf8(mine.yaml.expose()).unwrap()).await;
    let version = mine.apiserver_version().await.unwrap();
    assert_eq!(version.git_version, "v1.20.2");
    assert!(matches!(
        k.access().kubeconfig(&bob, &id).await,
        Err(kqueen_core::Error::NotFound(_))
    ));

    // Scale: the first pool's replicas, followed until the workers are all there.
    k.clusters().scale_cluster(&alice, &id, 3).await.unwrap();
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;
    let object = cluster_json(&mgmt, "v1beta2", "team-a-dev").await.unwrap();
    assert_eq!(
        object["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"],
        3
    );
    let machines = machines_of(&mgmt, "team-a-dev").await;
    assert_eq!(machines.len(), 4, "{machines:#?}");
    let events = events_of(&k, &id).await;
    assert!(
        events.iter().any(|e| e == "Workers: 3 of 3 machines ready"),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("Workers: 1 of 3") || e.starts_with("Workers: 2 of 3")),
        "the convergence was not shown: {events:#?}"
    );
    // The scale's count is the cluster's parameter; its node count is the same until the
    // background inventory sync (started when the cluster turned Ready) reports what the
    // cluster serves: the fake provider's machines register no Node, so 0 after it.
    let detail = k.clusters().cluster_detail(&alice, &id).await.unwrap();
    assert_eq!(detail.cluster.parameters["node_count"], "3");
    assert!(
        [0, 3].contains(&detail.cluster.node_count),
        "{}",
        detail.cluster.node_count
    );
    assert!(
        events.iter().any(|e| e == "Ready: scaled to 3 nodes"),
        "{events:#?}"
    );
    // Beyond the template's range: refused before anything runs.
    assert!(matches!(
        k.clusters().scale_cluster(&alice, &id, 4).await,
        Err(kqueen_core::Error::Invalid(_))
    ));

    // Upgrade: the topology's version, followed until every machine runs it.
    k.clusters()
        .upgrade_cluster(&alice, &id, "v1.31.0")
        .await
        .unwrap();
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;
    let object = cluster_json(&mgmt, "v1beta2", "team-a-dev").await.unwrap();
    assert_eq!(object["spec"]["topology"]["version"], "v1.31.0");
    let machines = machines_of(&mgmt, "team-a-dev").await;
    assert_eq!(machines.len(), 4);
    assert!(
        machines
            .iter()
            .all(|m| m["spec"]["version"] == "v1.31.0" && m["status"]["phase"] == "Running"),
        "{machines:#?}"
    );
    let events = events_of(&k, &id).await;
    assert!(
        events
            .iter()
            .any(|e| e == "Machines at v1.31.0: 4 of 4 ready"),
        "{events:#?}"
    );

    // Replace a dead node: its Machine (the one whose nodeRef names it) is deleted and
    // Cluster API makes a new one. The fake's machines register no Node, so the dead node
    // is written into the workload cluster by hand, never having reported Ready.
    let machines = machines_of(&mgmt, "team-a-dev").await;
    let victim = machines
        .iter()
        .find(|m| {
            m["metadata"]["labels"]
                .get(capi::CONTROL_PLANE_LABEL)
                .is_none()
        })
        .map(|m| m["metadata"]["name"].as_str().unwrap().to_owned())
        .unwrap();
    let workload_client =
        client_of(std::str::from_utf8(hosted_kubeconfig.yaml.expose()).unwrap()).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(workload_client.clone());
    let node: k8s_openapi::api::core::v1::Node =
        serde_json::from_value(json!({"metadata": {"name": victim}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    assert!(matches!(
        k.clusters().replace_node(&alice, &id, &victim).await,
        Err(kqueen_core::Error::Forbidden)
    ));
    assert!(matches!(
        k.clusters().replace_node(&bob, &id, &victim).await,
        Err(kqueen_core::Error::NotFound(_))
    ));
    assert!(matches!(
        k.clusters().replace_node(&ops, &id, "not-a-node").await,
        Err(kqueen_core::Error::Invalid(_))
    ));
    let detail = k.clusters().cluster_detail(&ops, &id).await.unwrap();
    assert!(detail.capabilities.replace_node);
    k.clusters().replace_node(&ops, &id, &victim).await.unwrap();
    converge(&k, &engine, &id, Some(ClusterState::Ready)).await;
    let machines = machines_of(&mgmt, "team-a-dev").await;
    assert_eq!(machines.len(), 4, "{machines:#?}");
    assert!(
        machines
            .iter()
            .all(|m| m["metadata"]["name"] != victim.as_str() && m["status"]["phase"] == "Running"),
        "{machines:#?}"
    );
    assert!(nodes.get_opt(&victim).await.unwrap().is_none());
    let events = events_of(&k, &id).await;
    for line in [
        format!("Replacement of node {victim} requested by cli:ops"),
        format!("Removing node {victim} from the cluster"),
        format!("Ready: node {victim} replaced"),
    ] {
        assert!(events.contains(&line), "no '{line}' in {events:#?}");
    }
    assert!(
        events
            .iter()
            .any(|e| e.starts_with(&format!("deleted the Machine default/{victim}"))),
        "{events:#?}"
    );

    // Adopt: a Cluster made without KQueen (through v1beta1, read back at v1beta2).
    let legacy: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Cluster",
        "metadata": {"name": "legacy", "namespace": "default"},
        "spec": {"topology": {
            "class": "quick-start",
            "version": "v1.30.0",
            "controlPlane": {"replicas": 1},
            "workers": {"machineDeployments": [{"class": "default-worker", "name": "md-0", "replicas": 2}]},
        }},
    }))
    .unwrap();
    clusters_api(&mgmt, "v1beta1")
        .create(&PostParams::default(), &legacy)
        .await
        .unwrap();
    // Only operators list and adopt.
    assert!(matches!(
        k.clusters().adoptable_clusters(&alice, "capi").await,
        Err(kqueen_core::Error::Forbidden)
    ));
    let found = k.clusters().adoptable_clusters(&ops, "capi").await.unwrap();
    let legacy = found
        .iter()
        .find(|d| d.reference == "default/legacy")
        .unwrap();
    assert_eq!(legacy.adopted_by, None);
    assert_eq!(legacy.class.as_deref(), Some("quick-start"));
    assert_eq!(legacy.worker_nodes, Some(2));
    let dev = found
        .iter()
        .find(|d| d.reference == "default/team-a-dev")
        .unwrap();
    assert_eq!(dev.adopted_by, Some(cluster.id));
    assert!(dev.ready);
    let adopt = AdoptRequest {
        tenant: "team-a".into(),
        name: String::new(),
        template: "capi-small".into(),
        reference: "default/legacy".into(),
    };
    assert!(matches!(
        k.clusters().adopt_cluster(&alice, adopt.clone()).await,
        Err(kqueen_core::Error::Forbidden)
    ));
    let (adopted, _) = k
        .clusters()
        .adopt_cluster(&ops, adopt.clone())
        .await
        .unwrap();
    assert_eq!(adopted.name.as_str(), "legacy");
    assert_eq!(adopted.node_count, 2);
    assert_eq!(
        adopted
            .parameters
            .get("kubernetes_version")
            .map(String::as_str),
        Some("v1.30.0")
    );
    let adopted_id = adopted.id.to_string();
    converge(&k, &engine, &adopted_id, Some(ClusterState::Ready)).await;
    let object = cluster_json(&mgmt, "v1beta2", "legacy").await.unwrap();
    assert_eq!(
        object["metadata"]["labels"]["kqueen.io/cluster"],
        adopted_id
    );
    // Adopted once only.
    assert!(matches!(
        k.clusters().adopt_cluster(&ops, adopt).await,
        Err(kqueen_core::Error::Conflict(m)) if m.contains("already belongs")
    ));
    // Now a KQueen cluster like any other: inventory read from the real cluster, personal
    // kubeconfigs for the tenant's members.
    let synced = k
        .fleet()
        .sync_cluster_inventory(&ops, &adopted_id)
        .await
        .unwrap();
    assert_eq!(synced.error, None, "{synced:?}");
    let inventory = k
        .fleet()
        .cluster_inventory(&alice, &adopted_id)
        .await
        .unwrap();
    assert_eq!(
        inventory.status.unwrap().api_version.as_deref(),
        Some("v1.20.2")
    );
    let mine = k.access().kubeconfig(&alice, &adopted_id).await.unwrap();
    let mine = client_of(std::str::from_utf8(mine.yaml.expose()).unwrap()).await;
    mine.apiserver_version().await.unwrap();

    // Delete: the Cluster is deleted, and KQueen waits until Cluster API has removed it
    // (the test controller holds its finalizer for a while).
    k.clusters().delete_cluster(&alice, &id).await.unwrap();
    converge(&k, &engine, &id, None).await;
    assert!(cluster_json(&mgmt, "v1beta2", "team-a-dev").await.is_none());
    assert!(cluster_json(&mgmt, "v1beta2", "legacy").await.is_some());
    drop(fake);
}

/// Waits until the cluster's timeline has an entry containing `text`.
async fn wait_for_event(k: &Kqueen, id: &str, text: &str) {
    let started = Instant::now();
    while !events_of(k, id).await.iter().any(|e| e.contains(text)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no '{text}' in {:#?}",
            events_of(k, id).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the cluster is in Error, and says why.
async fn error_of(k: &Kqueen, id: &str) -> String {
    let ops = Actor::cli(Some("ops".into()));
    let started = Instant::now();
    loop {
        let d = k.clusters().cluster_detail(&ops, id).await.unwrap();
        if d.cluster.state == ClusterState::Error {
            return d.cluster.error.unwrap_or_default();
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "still {:?}: {:#?}",
            d.cluster.state,
            d.events
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn failures_are_named_on_a_v1beta1_management_cluster() {
    let Some(management) = RealApiServer::start().await else {
        return;
    };
    let mgmt = client_of(&management.admin_kubeconfig()).await;
    let db = kqueen_testkit::TestDatabase::sqlite();
    let store = db.connect().await;
    let work = tempfile::tempdir().unwrap();
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_registry(registry())
        .with_group_map(GroupMap::parse("team-a=team-a:member").unwrap());
    let alice = kqueen_testkit::people::login(&k, "alice", "team-a").await;
    let ops = Actor::cli(Some("ops".into()));
    let mut config = EngineConfig::new(work.path().join("clusters"));
    config.poll_interval = Duration::from_millis(50);
    config.max_attempts = 2;
    config.lease = Duration::from_secs(2);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(k.engine(config.clone()).run(stopped));

    let kubeconfig = management.admin_kubeconfig();
    let unreachable = kubeconfig.replace(management.url(), "https://127.0.0.1:1");
    for (provider, config) in [
        ("capi", kubeconfig.as_str()),
        ("down", unreachable.as_str()),
    ] {
        kqueen_testkit::catalog::offer(
            &k,
            &ops,
            (
                "cluster-api",
                provider,
                &[
                    ("management_kubeconfig", config),
                    ("cluster_class", "quick-start"),
                ],
            ),
            (&format!("{provider}-t"), ""),
        )
        .await;
    }
    k.catalog()
        .create_template(
            &ops,
            TemplateInput {
                name: "no-class".into(),
                provider: "capi".into(),
                overrides: r#"{"worker_class": {"fixed": "default-worker"}}"#.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let request = |name: &str, template: &str| {
        let k = k.clone();
        let alice = alice.clone();
        let (name, template) = (name.to_owned(), template.to_owned());
        async move {
            k.clusters()
                .request_cluster(
                    &alice,
                    ClusterRequest {
                        tenant: Some("team-a".into()),
                        name,
                        template,
                        parameters: [("kubernetes_version".to_owned(), "1.29.4".to_owned())].into(),
                    },
                )
                .await
                .unwrap()
                .0
                .id
                .to_string()
        }
    };

    // Bad parameters are refused at the request.
    let refused = k
        .clusters()
        .request_cluster(
            &alice,
            ClusterRequest {
                tenant: Some("team-a".into()),
                name: "odd".into(),
                template: "capi-t".into(),
                parameters: [
                    ("kubernetes_version".to_owned(), "1.29.4".to_owned()),
                    ("control_plane_replicas".to_owned(), "2".to_owned()),
                ]
                .into(),
            },
        )
        .await;
    assert!(
        matches!(&refused, Err(kqueen_core::Error::Invalid(v)) if v.to_string().contains("odd")),
        "{refused:?}"
    );

    // The management cluster cannot be reached: retried, then given up with the reason.
    let down = request("down", "down-t").await;
    let why = error_of(&k, &down).await;
    assert!(
        why.contains("gave up after 2 attempts")
            && why.contains("cannot reach the management cluster"),
        "{why}"
    );

    // Cluster API is not installed: the missing CRDs are named, to the member and to the
    // operator listing clusters to adopt.
    let bare = request("bare", "capi-t").await;
    let why = error_of(&k, &bare).await;
    assert!(
        why.contains("clusters.cluster.x-k8s.io")
            && why.contains("machines.cluster.x-k8s.io")
            && why.contains("clusterclasses.cluster.x-k8s.io"),
        "{why}"
    );
    let listed = k.clusters().adoptable_clusters(&ops, "capi").await;
    assert!(
        matches!(&listed, Err(kqueen_core::Error::Conflict(m)) if m.contains("clusters.cluster.x-k8s.io")),
        "{listed:?}"
    );

    // Cluster API v1beta1 only (an older management cluster): still served.
    capi::install_crds(&mgmt, Served::V1Beta1).await.unwrap();
    // Its ClusterClass missing: named.
    let classless = request("classless", "capi-t").await;
    let why = error_of(&k, &classless).await;
    assert!(
        why.contains("ClusterClass default/quick-start does not exist"),
        "{why}"
    );
    capi::create_cluster_class(&mgmt, "default", "quick-start", Served::V1Beta1)
        .await
        .unwrap();

    let fake = FakeCapi::start(mgmt.clone(), Served::V1Beta1, Duration::from_millis(100));
    fake.set_kubeconfig(kubeconfig.clone());
    let ok = request("ok", "capi-t").await;
    let ops_view = || k.clusters().cluster_detail(&ops, &ok);
    let started = Instant::now();
    while ops_view().await.unwrap().cluster.state != ClusterState::Ready {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:#?}",
            ops_view().await.unwrap().events
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let object = cluster_json(&mgmt, "v1beta1", "team-a-ok").await.unwrap();
    assert_eq!(object["spec"]["topology"]["class"], "quick-start");
    assert_eq!(object["spec"]["topology"]["version"], "v1.29.4");
    let events = events_of(&k, &ok).await;
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("Condition ControlPlaneReady is True")),
        "{events:#?}"
    );

    // Cluster API fails one, one is stuck, one never gets its kubeconfig Secret, one gets a
    // bad one. The controller waits until they are marked.
    fake.pause(true);
    let failing = request("failing", "capi-t").await;
    let stuck = request("stuck", "capi-t").await;
    let nokc = request("nokc", "capi-t").await;
    let badkc = request("badkc", "capi-t").await;
    for (name, annotation, value) in [
        (
            "failing",
            capi::FAIL_ANNOTATION,
            "no capacity left in the pool",
        ),
        (
            "stuck",
            capi::STUCK_ANNOTATION,
            "machine stuck-cp-0 does not boot",
        ),
        ("nokc", capi::NO_KUBECONFIG_ANNOTATION, "true"),
        ("badkc", capi::BAD_KUBECONFIG_ANNOTATION, "true"),
    ] {
        let name = format!("team-a-{name}");
        let started = Instant::now();
        while cluster_json(&mgmt, "v1beta1", &name).await.is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no Cluster {name}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        clusters_api(&mgmt, "v1beta1")
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {annotation: value}}})),
            )
            .await
            .unwrap();
    }
    fake.pause(false);

    let why = error_of(&k, &failing).await;
    assert_eq!(
        why,
        "Cluster API reports the cluster failed: no capacity left in the pool"
    );
    let why = error_of(&k, &badkc).await;
    assert!(
        why.contains("Secret default/team-a-badkc-kubeconfig does not hold a usable kubeconfig"),
        "{why}"
    );
    // Stuck: the template's timeout ends it, with what Cluster API last said.
    wait_for_event(&k, &stuck, "machine stuck-cp-0 does not boot").await;
    wait_for_event(&k, &nokc, "waiting for the kubeconfig Secret").await;
    // A running operation keeps the deadline it started with: stop the worker, bring the
    // deadlines close, and let another worker take the operations over.
    stop.send(true).unwrap();
    engine.await.unwrap();
    for id in [&stuck, &nokc] {
        store
            .testing_set_deadline(
                uuid::Uuid::parse_str(id).unwrap(),
                kqueen_core::clock::now() + chrono::Duration::seconds(5),
            )
            .await
            .unwrap();
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(k.engine(config).run(stopped));
    let why = error_of(&k, &stuck).await;
    assert!(
        why.starts_with("timed out") && why.contains("machine stuck-cp-0 does not boot"),
        "{why}"
    );
    let why = error_of(&k, &nokc).await;
    assert!(
        why.starts_with("timed out")
            && why.contains("kubeconfig Secret default/team-a-nokc-kubeconfig"),
        "{why}"
    );
    // A failed cluster's delete removes its Cluster.
    k.clusters().delete_cluster(&alice, &failing).await.unwrap();
    let started = Instant::now();
    while cluster_json(&mgmt, "v1beta1", "team-a-failing")
        .await
        .is_some()
    {
        assert!(started.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send(true).unwrap();
    engine.await.unwrap();
    drop(fake);
}
