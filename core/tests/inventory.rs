//! The fleet inventory end to end: clusters imported through the real import provisioner,
//! synced from an in-process fake API server (and from a real kube-apiserver when
//! `KQUEEN_TEST_KUBE_APISERVER` names one), with one unreachable cluster in the same sync;
//! then the cluster inventory, the fleet dashboard and the fleet queries, on SQLite and
//! Postgres, as operators, tenant admins, members of the right and of the wrong tenant.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kqueen_core::cluster::{ClusterRequest, ClusterState};
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::inventory::checks::Severity;
use kqueen_core::inventory::fleet::FleetFilter;
use kqueen_core::inventory::{PodPhase, WorkloadKind, WorkloadState};
use kqueen_core::kubernetes::{client, parse_kubeconfig};
use kqueen_core::page::Page;
use kqueen_core::{Actor, Error, ExternalLogin, InventorySettings, Kqueen};
use kqueen_testkit::TestDatabase;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use support::apiserver::RealApiServer;
use support::fake_kube::FakeKube;

const DIGEST: &str = "sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac";

async fn admin_client(kubeconfig: &str) -> kube::Client {
    let parsed = parse_kubeconfig(kubeconfig, None, false).unwrap();
    client(&parsed, Duration::from_secs(10)).await.unwrap()
}

async fn create<K>(api: &Api<K>, object: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap()
}

async fn set_status<K>(api: &Api<K>, name: &str, status: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

fn pod_spec(image: &str, node: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "nodeName": node,
        "containers": [{
            "name": "main", "image": image,
            "resources": {"requests": {"cpu": cpu, "memory": memory}}
        }]
    })
}

/// A Deployment, its ReplicaSet and `pods` pods, linked by owner references as the
/// controllers would; `ready` of them Running.
async fn deployment(c: &kube::Client, ns: &str, name: &str, image: &str, pods: u32, ready: u32) {
    let labels = json!({"app": name});
    let template =
        json!({"metadata": {"labels": labels}, "spec": pod_spec(image, "node-a", "250m", "256Mi")});
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), ns);
    let d = create(
        &deployments,
        json!({"metadata": {"name": name}, "spec": {"replicas": pods,
               "selector": {"matchLabels": labels}, "template": template}}),
    )
    .await;
    set_status(
        &deployments,
        name,
        json!({"replicas": pods, "readyReplicas": ready}),
    )
    .await;
    let rs_name = format!("{name}-5f7c9");
    let owner = |kind: &str, name: &str, uid: &str, api: &str| json!([{"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": true}]);
    let replica_sets: Api<ReplicaSet> = Api::namespaced(c.clone(), ns);
    let rs = create(
        &replica_sets,
        json!({"metadata": {"name": rs_name, "labels": labels,
                "ownerReferences": owner("Deployment", name, d.metadata.uid.as_deref().unwrap(), "apps/v1")},
               "spec": {"replicas": pods, "selector": {"matchLabels": labels}, "template": template}}),
    )
    .await;
    let pods_api: Api<Pod> = Api::namespaced(c.clone(), ns);
    for i in 0..pods {
        let pod_name = format!("{rs_name}-{i}");
        create(
            &pods_api,
            json!({"metadata": {"name": pod_name, "labels": labels,
                    "ownerReferences": owner("ReplicaSet", &rs_name, rs.metadata.uid.as_deref().unwrap(), "apps/v1")},
                   "spec": pod_spec(image, "node-a", "250m", "256Mi")}),
        )
        .await;
        let running = i < ready;
        set_status(
            &pods_api,
            &pod_name,
            json!({
                "phase": if running { "Running" } else { "Pending" },
                "containerStatuses": [{
                    "name": "main", "image": image, "imageID": format!("docker.io/library/nginx@{DIGEST}"),
                    "ready": running, "restartCount": i, "state": {}
                }]
            }),
        )
        .await;
    }
}

/// What the scenario puts in a cluster: two nodes (one NotReady), a web Deployment on a
/// pinned tag, an api Deployment on `:latest` not ready yet, a privileged DaemonSet pod with
/// a hostPath volume, and a finished Job using an untagged image.
async fn seed_cluster(c: &kube::Client) {
    let namespaces: Api<Namespace> = Api::all(c.clone());
    for ns in ["web", "ops"] {
        create(&namespaces, json!({"metadata": {"name": ns}})).await;
    }
    let nodes: Api<Node> = Api::all(c.clone());
    for (name, ready) in [("node-a", "True"), ("node-b", "False")] {
        create(&nodes, json!({"metadata": {"name": name}})).await;
        set_status(
            &nodes,
            name,
            json!({
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
                "conditions": [
                    {"type": "Ready", "status": ready, "reason": "KubeletReady", "message": "",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "DiskPressure", "status": if ready == "True" { "False" } else { "True" },
                     "reason": "x", "message": "",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                ],
                "nodeInfo": {
                    "kubeletVersion": "v1.33.2", "containerRuntimeVersion": "containerd://2.0.5",
                    "osImage": "Debian GNU/Linux 12 (bookworm)", "kernelVersion": "6.1.0-30-amd64",
                    "architecture": "amd64", "operatingSystem": "linux", "machineID": "m",
                    "systemUUID": "s", "bootID": "b", "kubeProxyVersion": ""
                }
            }),
        )
        .await;
    }
    deployment(c, "web", "front", "nginx:1.27", 2, 2).await;
    deployment(c, "web", "api", "ghcr.io/acme/api:latest", 1, 0).await;

    let daemon_sets: Api<DaemonSet> = Api::namespaced(c.clone(), "ops");
    let ds = create(
        &daemon_sets,
        json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec("registry.k8s.io/agent:1.0", "node-a", "100m", "64Mi")}}}),
    )
    .await;
    set_status(
        &daemon_sets,
        "agent",
        json!({"desiredNumberScheduled": 1, "numberReady": 1, "currentNumberScheduled": 1, "numberMisscheduled": 0}),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "ops");
    create(
        &pods,
        json!({"metadata": {"name": "agent-x1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                "name": "agent", "uid": ds.metadata.uid.unwrap(), "controller": true}]},
               "spec": {"nodeName": "node-a",
                        "volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}],
                        "containers": [{"name": "agent", "image": "registry.k8s.io/agent:1.0",
                                        "securityContext": {"privileged": true},
                                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}),
    )
    .await;
    set_status(&pods, "agent-x1", json!({"phase": "Running"})).await;

    let jobs: Api<Job> = Api::namespaced(c.clone(), "ops");
    let job = create(
        &jobs,
        json!({"metadata": {"name": "migrate"}, "spec": {"template": {
            "metadata": {"labels": {"job": "migrate"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}}),
    )
    .await;
    let t = "2026-01-01T00:00:00Z";
    set_status(
        &jobs,
        "migrate",
        json!({"succeeded": 1, "startTime": t, "completionTime": t, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t},
            {"type": "Complete", "status": "True", "lastTransitionTime": t}]}),
    )
    .await;
    create(
        &pods,
        json!({"metadata": {"name": "migrate-q2", "labels": {"job": "migrate"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "migrate",
                "uid": job.metadata.uid.unwrap(), "controller": true}]},
               "spec": {"nodeName": "node-a", "restartPolicy": "Never",
                        "containers": [{"name": "m", "image": "busybox"}]}}),
    )
    .await;
    set_status(&pods, "migrate-q2", json!({"phase": "Succeeded"})).await;
}

struct Fleet {
    k: Kqueen,
    ops: Actor,
    adam: Actor,
    alice: Actor,
    bob: Actor,
    work: tempfile::TempDir,
    _db: TestDatabase,
}

async fn fleet(db: TestDatabase) -> Fleet {
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_group_map(
            GroupMap::parse("team-a=team-a:member,team-a-admins=team-a:admin,team-b=team-b:member")
                .unwrap(),
        )
        .with_inventory_settings(InventorySettings {
            concurrency: 4,
            timeout: Duration::from_secs(5),
            allowed_registries: vec!["docker.io/library".into(), "registry.k8s.io".into()],
            ..InventorySettings::default()
        });
    let login = |sub: &str, group: &str| ExternalLogin {
        issuer: "http://idp.test".into(),
        subject: sub.into(),
        preferred_username: Some(sub.into()),
        email: None,
        name: None,
        groups: vec![group.into()],
    };
    let mut users = Vec::new();
    for (sub, group) in [
        ("adam", "team-a-admins"),
        ("alice", "team-a"),
        ("bob", "team-b"),
    ] {
        users.push(Actor::user(
            k.auth()
                .login_external(&login(sub, group), None)
                .await
                .unwrap(),
        ));
    }
    let bob = users.pop().unwrap();
    let alice = users.pop().unwrap();
    let adam = users.pop().unwrap();
    let ops = Actor::cli(Some("ops".into()));
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("import", "existing", &[("probe_timeout_seconds", "5")]),
        ("import", ""),
    )
    .await;
    Fleet {
        k,
        ops,
        adam,
        alice,
        bob,
        work: tempfile::tempdir().unwrap(),
        _db: db,
    }
}

impl Fleet {
    /// Imports a cluster and lets the engine bring it to Ready.
    async fn import(&self, who: &Actor, tenant: &str, name: &str, kubeconfig: &str) -> String {
        let (c, _) = self
            .k
            .clusters()
            .request_cluster(
                who,
                ClusterRequest {
                    tenant: Some(tenant.into()),
                    name: name.into(),
                    template: "import".into(),
                    parameters: [("kubeconfig".to_owned(), kubeconfig.to_owned())].into(),
                },
            )
            .await
            .unwrap();
        let mut config = EngineConfig::new(self.work.path().to_owned());
        config.poll_interval = Duration::from_millis(20);
        self.k.engine(config).run_until_idle().await.unwrap();
        let id = c.id.to_string();
        let state = self
            .k
            .clusters()
            .cluster_detail(who, &id)
            .await
            .unwrap()
            .cluster
            .state;
        assert_eq!(state, ClusterState::Ready, "{name}");
        id
    }
}

/// The whole scenario; `live` is the cluster with content (fake or real API server).
async fn scenario(db: TestDatabase, live_kubeconfig: &str, with_metrics: bool) {
    let f = fleet(db).await;
    let prod = f.import(&f.alice, "team-a", "prod", live_kubeconfig).await;
    // A second cluster that answers at import time and is gone by the sync.
    let doomed = FakeKube::start().await;
    let gone = f
        .import(&f.bob, "team-b", "gone", &doomed.admin_kubeconfig())
        .await;
    drop(doomed);

    let started = Instant::now();
    let results = f.k.fleet().sync_inventory().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(results.len(), 2);
    let ok = results.iter().find(|r| r.cluster == "prod").unwrap();
    assert_eq!(ok.error, None, "{ok:?}");
    let dead = results.iter().find(|r| r.cluster == "gone").unwrap();
    assert!(dead.error.is_some(), "{dead:?}");

    // The cluster page's inventory.
    let inv =
        f.k.fleet()
            .cluster_inventory(&f.alice, &prod)
            .await
            .unwrap();
    let status = inv.status.clone().unwrap();
    assert!(status.synced_at.is_some() && status.error.is_none());
    assert!(status.api_version.unwrap().starts_with("v1."));
    assert_eq!(status.metrics, with_metrics);
    let names: Vec<&str> = inv.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node-a", "node-b"]);
    let a = &inv.nodes[0];
    assert!(a.ready);
    assert_eq!(a.capacity.cpu_millis, 4000);
    assert_eq!(a.allocatable.memory_bytes, 7 << 30);
    // front ×2 + api ×1 (Pending still holds its request) + agent; not the finished Job.
    assert_eq!(a.requested.cpu_millis, 3 * 250 + 100);
    assert_eq!(a.pods, 4);
    assert_eq!(a.kubelet_version, "v1.33.2");
    assert_eq!(a.used.is_some(), with_metrics);
    let b = &inv.nodes[1];
    assert!(!b.ready);
    assert_eq!(b.problems, ["NotReady", "DiskPressure"]);
    let w = |kind: WorkloadKind, name: &str| {
        inv.workloads
            .iter()
            .find(|w| w.kind == kind && w.name == name)
            .unwrap_or_else(|| panic!("{kind} {name}: {:?}", inv.workloads))
            .clone()
    };
    assert_eq!(
        w(WorkloadKind::Deployment, "front").state,
        WorkloadState::Ready
    );
    assert_eq!(
        w(WorkloadKind::Deployment, "api").state,
        WorkloadState::Progressing
    );
    assert_eq!(
        w(WorkloadKind::DaemonSet, "agent").state,
        WorkloadState::Ready
    );
    assert_eq!(w(WorkloadKind::Job, "migrate").state, WorkloadState::Ready);
    let pods = |ns: &str, phase: PodPhase| {
        inv.pods
            .iter()
            .find(|p| p.namespace == ns && p.phase == phase)
            .map_or(0, |p| p.count)
    };
    assert_eq!(pods("web", PodPhase::Running), 2);
    assert_eq!(pods("web", PodPhase::Pending), 1);
    assert_eq!(pods("ops", PodPhase::Succeeded), 1);
    let checks: Vec<&str> = inv.findings.iter().map(|f| f.check.as_str()).collect();
    for expected in [
        "latest-tag",
        "privileged",
        "node-not-ready",
        "registry-not-allowed",
    ] {
        assert!(checks.contains(&expected), "{expected} in {checks:?}");
    }
    assert!(inv
        .findings
        .iter()
        .any(|f| f.subject == "ops/DaemonSet/agent container agent" && f.check == "privileged"));

    // Images across the fleet: which clusters, namespaces and workloads run nginx.
    let search = FleetFilter {
        q: Some("NGINX".into()),
        ..FleetFilter::default()
    };
    let (images, total) =
        f.k.fleet()
            .fleet_images(&f.ops, &search, Page::default())
            .await
            .unwrap();
    assert_eq!(total, 1);
    let nginx = &images[0];
    assert_eq!(
        nginx.image,
        format!("docker.io/library/nginx:1.27@{DIGEST}")
    );
    assert_eq!(nginx.tag.as_deref(), Some("1.27"));
    assert_eq!(nginx.digest.as_deref(), Some(DIGEST));
    assert_eq!(nginx.usages.len(), 1);
    let u = &nginx.usages[0];
    assert_eq!(
        (
            u.cluster.as_str(),
            u.tenant.as_str(),
            u.namespace.as_str(),
            u.workload_kind.as_str(),
            u.workload_name.as_str(),
            u.pods
        ),
        ("prod", "team-a", "web", "Deployment", "front", 2)
    );
    let first_seen = u.first_seen.unwrap();
    let (all, total) =
        f.k.fleet()
            .fleet_images(&f.ops, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert_eq!(total, 4, "{all:?}");

    // Versions of every cluster and node; the dead cluster is there without nodes.
    let (versions, total) =
        f.k.fleet()
            .fleet_versions(&f.ops, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert_eq!(total, 3, "{versions:?}");
    assert_eq!(versions[0].cluster, "prod");
    assert_eq!(versions[0].kubelet_version.as_deref(), Some("v1.33.2"));
    assert_eq!(versions[2].cluster, "gone");
    assert_eq!(versions[2].node, None);

    // Findings, most severe first, with counts per check.
    let (rows, total) =
        f.k.fleet()
            .fleet_findings(&f.ops, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert_eq!(rows[0].finding.severity, Severity::High);
    let medium = FleetFilter {
        severity: Some(Severity::Medium),
        ..FleetFilter::default()
    };
    let counts =
        f.k.fleet()
            .fleet_finding_counts(&f.ops, &medium)
            .await
            .unwrap();
    assert_eq!(counts.iter().map(|c| c.count).sum::<u64>(), total);
    let (rows, total) =
        f.k.fleet()
            .fleet_findings(&f.ops, &medium, Page::default())
            .await
            .unwrap();
    assert!(rows.iter().all(|r| r.finding.severity == Severity::Medium));
    assert!(total >= 2, "latest and untagged images");

    // The dashboard: states, versions, totals, and who needs attention.
    let overview =
        f.k.fleet()
            .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::default())
            .await
            .unwrap();
    assert_eq!(overview.by_state, [("Ready".to_owned(), 2)]);
    assert_eq!(overview.totals.nodes, 2);
    assert_eq!(overview.totals.nodes_ready, 1);
    let attention = |name: &str| {
        overview
            .attention
            .iter()
            .find(|a| a.cluster.name == name)
            .map(|a| a.reasons.join("; "))
            .unwrap_or_default()
    };
    assert!(
        attention("gone").contains("last sync failed"),
        "{:?}",
        overview.attention
    );
    assert!(attention("prod").contains("1 of 2 nodes not Ready"));
    assert_eq!(overview.attention_total, 2);
    // The totals are those of the clusters, and the clusters come one page at a time (by
    // tenant and name), or only those needing attention, each with its reasons.
    assert_eq!(overview.clusters_total, 2);
    let listed: Vec<&kqueen_core::inventory::fleet::FleetCluster> =
        overview.clusters.iter().map(|a| &a.cluster).collect();
    assert_eq!(
        overview.totals.nodes,
        listed.iter().map(|c| u64::from(c.nodes)).sum::<u64>()
    );
    let mut capacity = kqueen_core::inventory::Resources::default();
    listed.iter().for_each(|c| capacity.add(c.capacity));
    assert_eq!(overview.totals.capacity, capacity);
    for (attention_only, offset) in [(false, 0), (false, 1), (true, 0), (true, 1)] {
        let one =
            f.k.fleet()
                .fleet_overview(
                    &f.ops,
                    &FleetFilter::default(),
                    attention_only,
                    Page::new(1, offset),
                )
                .await
                .unwrap();
        assert_eq!((one.clusters.len(), one.clusters_total), (1, 2));
        assert_eq!(one.clusters[0].cluster.id, listed[offset as usize].id);
        assert!(!one.clusters[0].reasons.is_empty() || !attention_only);
        assert_eq!(
            (one.totals.clone(), one.attention_total),
            (overview.totals.clone(), 2)
        );
    }
    let none =
        f.k.fleet()
            .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::new(1, 2))
            .await
            .unwrap();
    assert!(none.clusters.is_empty() && none.clusters_total == 2);

    // Tenants see their own clusters only, in every query.
    let (theirs, _) =
        f.k.fleet()
            .fleet_images(&f.bob, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert!(theirs.is_empty(), "{theirs:?}");
    let (versions, _) =
        f.k.fleet()
            .fleet_versions(&f.bob, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert!(versions.iter().all(|v| v.cluster == "gone"));
    assert_eq!(
        f.k.fleet()
            .fleet_findings(&f.bob, &FleetFilter::default(), Page::default())
            .await
            .unwrap()
            .1,
        0
    );
    let (mine, _) =
        f.k.fleet()
            .fleet_images(&f.alice, &FleetFilter::default(), Page::default())
            .await
            .unwrap();
    assert_eq!(mine.len(), 4);
    // Asking for another tenant by name gives nothing, not their data.
    let (other, _) =
        f.k.fleet()
            .fleet_images(
                &f.alice,
                &FleetFilter {
                    tenant: Some("team-b".into()),
                    ..FleetFilter::default()
                },
                Page::default(),
            )
            .await
            .unwrap();
    assert!(other.is_empty());
    assert!(matches!(
        f.k.fleet().cluster_inventory(&f.bob, &prod).await,
        Err(Error::NotFound(_))
    ));
    // The dashboard is for operators and tenant admins.
    let admins =
        f.k.fleet()
            .fleet_overview(&f.adam, &FleetFilter::default(), false, Page::default())
            .await
            .unwrap();
    assert_eq!(admins.totals.clusters, 1);
    assert!(matches!(
        f.k.fleet()
            .fleet_overview(&f.alice, &FleetFilter::default(), false, Page::default())
            .await,
        Err(Error::Forbidden)
    ));
    assert!(matches!(
        f.k.fleet()
            .fleet_images(
                &Actor::anonymous(),
                &FleetFilter::default(),
                Page::default()
            )
            .await,
        Err(Error::Unauthenticated)
    ));
    // Only members of the cluster's tenant may sync it on demand.
    assert!(f
        .k
        .fleet()
        .sync_cluster_inventory(&f.bob, &prod)
        .await
        .is_err());
    let again =
        f.k.fleet()
            .sync_cluster_inventory(&f.alice, &prod)
            .await
            .unwrap();
    assert_eq!(again.error, None);
    assert!(matches!(
        f.k.fleet().sync_cluster_inventory(&f.bob, &gone).await,
        Ok(r) if r.error.is_some()
    ));

    // History: a second sync keeps "first seen".
    let (again, _) =
        f.k.fleet()
            .fleet_images(&f.ops, &search, Page::default())
            .await
            .unwrap();
    assert_eq!(again[0].usages[0].first_seen, Some(first_seen));
    assert!(again[0].usages[0].last_seen.unwrap() >= first_seen);

    dashboard_reuse(&f, &prod, live_kubeconfig).await;
}

/// The dashboard's answers are reused while nothing this process knows of has changed, and
/// read afresh after a cluster write (any process) or a sync of this process.
async fn dashboard_reuse(f: &Fleet, prod: &str, kubeconfig: &str) {
    let reasons = |k: Kqueen| async move {
        let o = k
            .fleet()
            .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::default())
            .await
            .unwrap();
        let prod = o
            .clusters
            .iter()
            .find(|a| a.cluster.name == "prod")
            .unwrap();
        (prod.reasons.join("; "), o.totals.clusters)
    };
    let fresh = f.k.clone().with_inventory_settings(InventorySettings {
        dashboard_max_age: Duration::ZERO,
        ..f.k.inventory_settings().clone()
    });
    let (before, clusters) = reasons(f.k.clone()).await;
    assert!(!before.contains("boom"), "{before}");
    // Requests that reuse an answer share it: nothing of it is copied per request.
    let (fleet, all) = (f.k.fleet(), FleetFilter::default());
    let first = fleet.fleet_overview(&f.ops, &all, false, Page::default());
    let first = first.await.unwrap();
    let second = fleet.fleet_overview(&f.ops, &all, false, Page::default());
    assert!(std::sync::Arc::ptr_eq(&first, &second.await.unwrap()));
    // Another replica's sync (written to the store behind this process's back): this
    // process keeps its answer for a few seconds; the database has the failure.
    let id = uuid::Uuid::parse_str(prod).unwrap();
    let store = f.k.store().clone();
    let fail = |why: &'static str| {
        let store = store.clone();
        async move {
            store
                .save_sync_failure(id, why, chrono::Utc::now(), 1)
                .await
                .unwrap();
        }
    };
    fail("boom").await;
    assert_eq!(reasons(f.k.clone()).await, (before.clone(), clusters));
    assert!(reasons(fresh.clone()).await.0.contains("boom"));
    // A cluster written (here a new request): read afresh at once.
    f.k.clusters()
        .request_cluster(
            &f.ops,
            ClusterRequest {
                tenant: Some("team-b".into()),
                name: "late".into(),
                template: "import".into(),
                parameters: [("kubeconfig".to_owned(), kubeconfig.to_owned())].into(),
            },
        )
        .await
        .unwrap();
    let (after_write, more) = reasons(f.k.clone()).await;
    assert!(after_write.contains("boom"), "{after_write}");
    assert_eq!(more, clusters + 1);
    // This process's own sync: read afresh at once.
    fail("bang").await;
    assert!(reasons(f.k.clone()).await.0.contains("boom"));
    let synced =
        f.k.fleet()
            .sync_cluster_inventory(&f.ops, prod)
            .await
            .unwrap();
    assert_eq!(synced.error, None);
    let (after_sync, _) = reasons(f.k.clone()).await;
    assert!(
        !after_sync.contains("boom") && !after_sync.contains("bang"),
        "{after_sync}"
    );
}

async fn with_fake(db: TestDatabase) {
    let fake = FakeKube::start().await;
    seed_cluster(&fake.admin_client()).await;
    for (node, cpu, memory) in [("node-a", "1500m", "3Gi"), ("node-b", "10m", "100Mi")] {
        fake.insert(
            "apis/metrics.k8s.io/v1beta1/nodes",
            json!({"metadata": {"name": node}, "timestamp": "2026-01-01T00:00:00Z", "window": "30s",
                   "usage": {"cpu": cpu, "memory": memory}}),
        );
    }
    scenario(db, &fake.admin_kubeconfig(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_sync_and_fleet_queries_on_sqlite() {
    with_fake(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_sync_and_fleet_queries_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    with_fake(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_sync_against_a_real_apiserver() {
    let Some(real) = RealApiServer::start().await else {
        return;
    };
    let kubeconfig = real.admin_kubeconfig();
    seed_cluster(&admin_client(&kubeconfig).await).await;
    // No metrics-server next to a bare API server: usage is unknown, requests still count.
    scenario(TestDatabase::sqlite(), &kubeconfig, false).await;
}

/// A node as a cluster reports it, with the given capacity and allocatable.
fn node_object(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "nodeInfo": {"kubeletVersion": "v1.99.0", "containerRuntimeVersion": "containerd://2.0.5",
                "osImage": "x", "kernelVersion": "x", "architecture": "amd64",
                "operatingSystem": "linux", "machineID": "m", "systemUUID": "s", "bootID": "b",
                "kubeProxyVersion": ""}
        }
    })
}

/// A bare pod running `image` (with the nginx digest in its status).
fn pod_object(name: &str, node: &str, image: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "web"},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": image}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "main", "image": image,
            "imageID": format!("docker.io/library/nginx@{DIGEST}"), "ready": true,
            "restartCount": 0, "state": {}}]}
    })
}

/// A TCP proxy to `target` (`http://host:port`) that, once `hang` is set, accepts
/// connections and never answers: a cluster that hangs after its import.
async fn hanging_proxy(
    target: &str,
) -> (
    String,
    Arc<std::sync::atomic::AtomicBool>,
    tokio::task::JoinHandle<()>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let target = target.trim_start_matches("http://").to_owned();
    let hang = Arc::new(AtomicBool::new(false));
    let flag = hang.clone();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            if flag.load(Ordering::SeqCst) {
                held.push(socket);
                continue;
            }
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut upstream) = tokio::net::TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut socket, &mut upstream).await;
                }
            });
        }
    });
    (url, hang, task)
}

/// A fleet with a hostile cluster (absurd node quantities on several nodes, a made-up
/// Kubernetes v1.99), a cluster that hangs, and on Postgres a cluster whose rows the store
/// refuses, synced together with a good one.
async fn hostile_fleet(db: TestDatabase, postgres: bool) {
    use kqueen_core::inventory::MAX_QUANTITY;
    use std::sync::atomic::Ordering;
    let f = fleet(db).await;
    let good = FakeKube::start().await;
    seed_cluster(&good.admin_client()).await;
    let prod = f
        .import(&f.alice, "team-a", "prod", &good.admin_kubeconfig())
        .await;

    let evil = FakeKube::start().await;
    evil.set_git_version("v1.99.0");
    evil.insert("api/v1/namespaces", json!({"metadata": {"name": "web"}}));
    for name in ["huge-1", "huge-2", "huge-3"] {
        evil.insert("api/v1/nodes", node_object(name, "9e15", "9E"));
    }
    evil.insert(
        "api/v1/namespaces/web/pods",
        pod_object("web-1", "huge-1", "nginx:1.27"),
    );
    let evil_id = f
        .import(&f.bob, "team-b", "evil", &evil.admin_kubeconfig())
        .await;

    let (proxy, hang, _proxy_task) = hanging_proxy(good.url()).await;
    let stuck_config = good.admin_kubeconfig().replace(good.url(), &proxy);
    f.import(&f.alice, "team-a", "stuck", &stuck_config).await;
    hang.store(true, Ordering::SeqCst);

    // Postgres refuses NUL characters in text: storing this cluster's rows fails.
    let nul = FakeKube::start().await;
    if postgres {
        nul.insert("api/v1/namespaces", json!({"metadata": {"name": "web"}}));
        nul.insert(
            "api/v1/namespaces/web/pods",
            pod_object("bad", "n", "nginx\u{0}evil"),
        );
        f.import(&f.bob, "team-b", "nul", &nul.admin_kubeconfig())
            .await;
    }

    let k = f.k.clone().with_inventory_settings(InventorySettings {
        concurrency: 4,
        timeout: Duration::from_secs(2),
        ..InventorySettings::default()
    });
    let started = Instant::now();
    let results = k.fleet().sync_inventory().await.unwrap();
    let elapsed = started.elapsed();
    let result = |name: &str| {
        results
            .iter()
            .find(|r| r.cluster == name)
            .unwrap_or_else(|| panic!("{name} in {results:?}"))
            .clone()
    };
    assert_eq!(result("prod").error, None);
    assert_eq!(result("evil").error, None);
    let stuck = result("stuck").error.unwrap();
    assert!(stuck.contains("timed out"), "{stuck}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    if postgres {
        let nul = result("nul").error.unwrap();
        assert!(nul.contains("storing"), "{nul}");
        assert_eq!(
            result("prod").error,
            None,
            "one cluster's store error fails no other"
        );
    }

    // Absurd quantities are clamped when stored, and no sum overflows: the dashboard works
    // and the next sync (which reads the fleet) too.
    let inv = k.fleet().cluster_inventory(&f.bob, &evil_id).await.unwrap();
    assert_eq!(inv.nodes.len(), 3);
    assert!(inv
        .nodes
        .iter()
        .all(|n| n.capacity.memory_bytes == MAX_QUANTITY && n.capacity.cpu_millis == MAX_QUANTITY));
    let overview = k
        .fleet()
        .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::default())
        .await
        .unwrap();
    let evil_row = overview
        .clusters
        .iter()
        .map(|a| &a.cluster)
        .find(|c| c.name == "evil")
        .unwrap();
    assert_eq!(evil_row.capacity.memory_bytes, 3 * MAX_QUANTITY);
    assert!(overview.totals.capacity.memory_bytes > 3 * MAX_QUANTITY);
    assert!(k.fleet().sync_inventory().await.is_ok());
    // Even clamped, enough nodes would overflow 64-bit integer sums (9000 × 2^50 > i64::MAX):
    // the sums are not integers.
    {
        use kqueen_core::inventory::{NodeInfo, Resources, Snapshot};
        use kqueen_core::store::InventoryStore;
        let huge = Resources {
            cpu_millis: u64::MAX,
            memory_bytes: u64::MAX,
        };
        let snapshot = Snapshot {
            api_version: "v1.99.0".into(),
            nodes: (0..9000)
                .map(|i| NodeInfo {
                    name: format!("n{i}"),
                    ready: true,
                    capacity: huge,
                    allocatable: huge,
                    requested: huge,
                    used: Some(huge),
                    ..NodeInfo::default()
                })
                .collect(),
            ..Snapshot::default()
        };
        let id: uuid::Uuid = evil_id.parse().unwrap();
        let store = k.store();
        InventoryStore::save_inventory(&**store, id, &snapshot, &[], kqueen_core::clock::now(), 1)
            .await
            .unwrap();
        let o = k
            .fleet()
            .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::default())
            .await
            .unwrap();
        let row = o
            .clusters
            .iter()
            .map(|a| &a.cluster)
            .find(|c| c.name == "evil")
            .unwrap();
        assert_eq!(row.nodes, 9000);
        assert_eq!(row.capacity.memory_bytes, 9000 * MAX_QUANTITY);
        assert_eq!(row.used.unwrap().cpu_millis, 9000 * MAX_QUANTITY);
        assert!(k.fleet().sync_inventory().await.is_ok());
    }

    // A cluster claiming v1.99 sets no floor and nothing offered: prod's v1.33 is fine. The
    // dashboard still says truthfully what runs: v1.99.0 is the newest running version.
    assert_eq!(overview.newest_offered, None);
    assert_eq!(overview.newest_running.as_deref(), Some("v1.99.0"));
    let reasons = |o: &kqueen_core::FleetOverview, name: &str| {
        o.attention
            .iter()
            .find(|a| a.cluster.name == name)
            .map(|a| a.reasons.join("; "))
            .unwrap_or_default()
    };
    assert!(
        !reasons(&overview, "prod").contains("behind"),
        "{overview:?}"
    );
    let prod_inv = k.fleet().cluster_inventory(&f.alice, &prod).await.unwrap();
    assert!(
        prod_inv
            .findings
            .iter()
            .all(|x| x.check != "unsupported-version"),
        "{:?}",
        prod_inv.findings
    );
    // The configured minimum is a version offered: prod is behind it.
    let floor = f.k.clone().with_inventory_settings(InventorySettings {
        min_kubernetes: Some((1, 34)),
        stale_after: Duration::from_millis(1),
        ..InventorySettings::default()
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    // A cluster imported and not synced yet.
    let fresh = FakeKube::start().await;
    f.import(&f.alice, "team-a", "fresh", &fresh.admin_kubeconfig())
        .await;
    let o = floor
        .fleet()
        .fleet_overview(&f.ops, &FleetFilter::default(), false, Page::default())
        .await
        .unwrap();
    assert_eq!(o.newest_offered.as_deref(), Some("1.34"));
    assert_eq!(o.newest_running.as_deref(), Some("v1.99.0"));
    let prod_reasons = reasons(&o, "prod");
    assert!(
        prod_reasons.contains("Kubernetes 1.33 is behind 1.34, the newest offered"),
        "{prod_reasons}"
    );
    assert!(
        prod_reasons.contains("stale: last synced"),
        "{prod_reasons}"
    );
    assert!(!reasons(&o, "evil").contains("behind"));
    assert_eq!(reasons(&o, "fresh"), "never synced");
    // What the database counts and lists as needing attention is what the reasons say.
    assert_attention_agrees(&floor, &f.ops).await;
    assert_attention_agrees(&k, &f.ops).await;

    // Image usages follow the cluster and tenant filters, not only the image search.
    let search = |tenant: Option<&str>, cluster: Option<&str>| FleetFilter {
        tenant: tenant.map(Into::into),
        cluster: cluster.map(Into::into),
        q: Some("nginx:1.27".into()),
        ..FleetFilter::default()
    };
    let (rows, _) = k
        .fleet()
        .fleet_images(&f.ops, &search(None, None), Page::default())
        .await
        .unwrap();
    let clusters: Vec<&str> = rows[0].usages.iter().map(|u| u.cluster.as_str()).collect();
    assert!(
        clusters.contains(&"prod") && clusters.contains(&"evil"),
        "{clusters:?}"
    );
    for (filter, only) in [
        (search(None, Some("prod")), "prod"),
        (search(Some("team-b"), None), "evil"),
    ] {
        let (rows, _) = k
            .fleet()
            .fleet_images(&f.ops, &filter, Page::default())
            .await
            .unwrap();
        assert!(!rows.is_empty());
        for r in &rows {
            assert!(
                r.usages.iter().all(|u| u.cluster == only),
                "{filter:?}: {r:?}"
            );
        }
    }

    // Two syncs of one cluster at once (the timer's and a Sync now) both succeed.
    for _ in 0..3 {
        let (a, b) = tokio::join!(
            k.fleet().sync_cluster_inventory(&f.alice, &prod),
            k.fleet().sync_cluster_inventory(&f.alice, &prod)
        );
        assert_eq!(a.unwrap().error, None);
        assert_eq!(b.unwrap().error, None);
    }

    // An image that goes away and comes back starts a new "first seen".
    let usage = |rows: &[kqueen_core::ImageRow]| {
        rows.iter()
            .flat_map(|r| r.usages.iter())
            .find(|u| u.cluster == "evil")
            .cloned()
    };
    let evil_only = search(None, Some("evil"));
    let (rows, _) = k
        .fleet()
        .fleet_images(&f.ops, &evil_only, Page::default())
        .await
        .unwrap();
    let before = usage(&rows).unwrap().first_seen.unwrap();
    let pods: Api<Pod> = Api::namespaced(evil.admin_client(), "web");
    pods.delete("web-1", &Default::default()).await.unwrap();
    assert_eq!(
        k.fleet()
            .sync_cluster_inventory(&f.bob, &evil_id)
            .await
            .unwrap()
            .error,
        None
    );
    let (rows, _) = k
        .fleet()
        .fleet_images(&f.ops, &evil_only, Page::default())
        .await
        .unwrap();
    assert!(usage(&rows).is_none(), "gone: {rows:?}");
    let (history, total) = k
        .fleet()
        .fleet_image_history(&f.ops, &evil_only, Page::default())
        .await
        .unwrap();
    assert_eq!(total, 1, "{history:?}");
    assert!(!history[0].present);
    assert_eq!(history[0].first_seen, before);
    assert_eq!(history[0].digest.as_deref(), Some(DIGEST));
    evil.insert(
        "api/v1/namespaces/web/pods",
        pod_object("web-1", "huge-1", "nginx:1.27"),
    );
    k.fleet()
        .sync_cluster_inventory(&f.bob, &evil_id)
        .await
        .unwrap();
    let (rows, _) = k
        .fleet()
        .fleet_images(&f.ops, &evil_only, Page::default())
        .await
        .unwrap();
    let again = usage(&rows).unwrap();
    assert!(
        again.first_seen.unwrap() > before,
        "{again:?} after {before}"
    );
    let (history, _) = k
        .fleet()
        .fleet_image_history(&f.ops, &evil_only, Page::default())
        .await
        .unwrap();
    assert!(
        history[0].present && history[0].first_seen > before,
        "{history:?}"
    );
    // Tenant members see their tenants' history only.
    let (mine, total) = k
        .fleet()
        .fleet_image_history(&f.alice, &FleetFilter::default(), Page::default())
        .await
        .unwrap();
    assert!(total >= 4, "{mine:?}");
    assert!(mine.iter().all(|h| h.tenant == "team-a"), "{mine:?}");
}

/// The clusters the dashboard counts and lists as needing attention (selected by the
/// database) are exactly those whose reasons (written by the service) are not empty. The two
/// are two readings: a background sync (a new cluster's first) may land between them, so
/// they are read again (a few times, bounded) until one pair is taken without one.
async fn assert_attention_agrees(k: &Kqueen, actor: &Actor) {
    for _ in 0..20 {
        if attention_agrees(k, actor).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if let Err(why) = attention_agrees(k, actor).await {
        panic!("{why}");
    }
}

/// Whether the dashboard's attention agrees with the reasons now, else why not.
async fn attention_agrees(k: &Kqueen, actor: &Actor) -> Result<(), String> {
    let filter = FleetFilter::default();
    let all = k
        .fleet()
        .fleet_overview(actor, &filter, false, Page::new(Page::MAX_LIMIT, 0))
        .await
        .unwrap();
    let mut flagged: Vec<String> = all
        .clusters
        .iter()
        .filter(|a| !a.reasons.is_empty())
        .map(|a| a.cluster.name.clone())
        .collect();
    let only = k
        .fleet()
        .fleet_overview(actor, &filter, true, Page::new(Page::MAX_LIMIT, 0))
        .await
        .unwrap();
    let mut selected: Vec<String> = only
        .clusters
        .iter()
        .map(|a| a.cluster.name.clone())
        .collect();
    let mut shown: Vec<String> = only
        .attention
        .iter()
        .map(|a| a.cluster.name.clone())
        .collect();
    flagged.sort();
    selected.sort();
    shown.sort();
    let agree = !flagged.is_empty()
        && selected == flagged
        && shown == flagged
        && only.attention_total == flagged.len() as u64
        && only.clusters_total == flagged.len() as u64
        && only.clusters.iter().all(|a| !a.reasons.is_empty());
    if agree {
        Ok(())
    } else {
        Err(format!(
            "flagged by the reasons {flagged:?}, selected by the database {selected:?}, \
             shown {shown:?}, totals {} and {}: {all:?}",
            only.attention_total, only.clusters_total
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_and_hanging_clusters_on_sqlite() {
    hostile_fleet(TestDatabase::sqlite(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_and_hanging_clusters_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    hostile_fleet(db, true).await;
}
