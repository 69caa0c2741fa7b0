//! Autoscaling over /api/v1 and the command line, against a real kube-apiserver (v1.20.2)
//! with the real kube-scheduler and controller manager (but its node lifecycle controller),
//! which a `command` provider's create command hands KQueen as a cluster. The test plays the
//! kubelets and the machines: it registers Ready Node objects with room for one CPU when the
//! provider's scale command (which records what it was asked) has run, and confirms the end
//! of pods being deleted (force-deleting them, as a kubelet does once their containers stop).
//!
//! Who may: members see and are refused changes, other tenants see nothing, a tenant admin's
//! maximum stays within the tenant's node quota (an operator's may not), a provider that
//! cannot scale is refused, figures out of range name their field. What it does: pods the
//! scheduler cannot place make KQueen scale up within the maximum and never past the quota
//! (it holds, saying so, until the quota is raised); a lowered maximum removes a node, its
//! pod evicted through the Eviction API first (policy/v1beta1 on 1.20) and its name handed to
//! the scale command; nodes underused for the set delay are drained and removed one at a time
//! down to the minimum; every decision is on the timeline and the node counts are charted.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::cli::Laptop;
use crate::clusters::{call, define, timeline, wait_for_state};
use crate::helpers::TestApp;
use crate::real_cluster::message;
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::TestDatabase;

/// Tenants team-a (amy, member; tim, admin) and team-b (bob, admin), the operator olga; the
/// real API server as cluster `web` of team-a, provider `lab` (with a scale command), and as
/// cluster `plain` of team-b, provider `bare` (without one), both Ready, one node asked for.
struct Lab {
    app: TestApp,
    kube: RealApiServer,
    client: kube::Client,
    olga: reqwest::Client,
    amy: reqwest::Client,
    tim: reqwest::Client,
    bob: reqwest::Client,
    web: String,
    plain: String,
    /// The scale command's record: one `count node` line per run.
    dir: tempfile::TempDir,
    /// Confirms the end of deleted pods while the test runs.
    kubelets: tokio::task::JoinHandle<()>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.kubelets.abort();
    }
}

async fn lab() -> Option<Lab> {
    // Prints why when it cannot start (no KQUEEN_TEST_KUBE_APISERVER): the test then skips.
    let mut kube = RealApiServer::start_with_controllers("*,-nodelifecycle").await?;
    if !kube.start_scheduler() {
        return None;
    }
    let app = TestApp::spawn_with_engine(
        TestDatabase::sqlite(),
        |_, _| {},
        |e| e.autoscale_interval = Duration::from_millis(300),
    )
    .await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let bob = app.user("bob", false, &[("team-b", "admin")]).await;

    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.kubeconfig");
    std::fs::write(&admin, kube.admin_kubeconfig()).unwrap();
    let script = |name: &str, body: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\nset -eu\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    };
    let create = script(
        "create.sh",
        format!("cp '{}' \"$KQ_KUBECONFIG\"\n", admin.display()),
    );
    let scale = script(
        "scale.sh",
        format!(
            "echo \"$KQ_NODE_COUNT ${{KQ_REMOVE_NODE:-}}\" >> '{}'\n",
            dir.path().join("scaled").display()
        ),
    );
    define(
        &app,
        &olga,
        json!({"name": "lab", "kind": "command", "settings": {
            "create_command": create, "scale_command": scale, "timeout_seconds": 120}}),
        json!({"name": "small", "provider": "lab", "tenants": ["team-a"]}),
    )
    .await;
    define(
        &app,
        &olga,
        json!({"name": "bare", "kind": "command",
            "settings": {"create_command": create, "timeout_seconds": 60}}),
        json!({"name": "bare", "provider": "bare", "tenants": ["team-b"]}),
    )
    .await;
    let mut ids = Vec::new();
    for (who, tenant, name, template) in [
        (&tim, "team-a", "web", "small"),
        (&bob, "team-b", "plain", "bare"),
    ] {
        let (status, body) = call(
            who,
            &app,
            Method::POST,
            "/api/v1/clusters",
            Some(json!({"tenant": tenant, "name": name, "template": template,
                "parameters": {"node_count": "1"}})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let id = body["cluster"]["id"].as_str().unwrap().to_owned();
        wait_for_state(&app, who, &id, "ready").await;
        ids.push(id);
    }
    let [web, plain] = <[String; 2]>::try_from(ids).unwrap();
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&kube.admin_kubeconfig(), None, false).unwrap();
    let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    let kubelets = tokio::spawn(confirm_deletions(client.clone()));
    Some(Lab {
        app,
        kube,
        client,
        olga,
        amy,
        tim,
        bob,
        web,
        plain,
        dir,
        kubelets,
    })
}

/// What the kubelets would do for pods being deleted: confirm it once their containers are
/// gone (at once here: there are none).
async fn confirm_deletions(client: kube::Client) {
    let pods: Api<Pod> = Api::all(client.clone());
    loop {
        if let Ok(list) = pods.list(&ListParams::default()).await {
            for pod in list.items {
                if pod.metadata.deletion_timestamp.is_none() {
                    continue;
                }
                let ns = pod.metadata.namespace.unwrap_or_default();
                let name = pod.metadata.name.unwrap_or_default();
                let _ = Api::<Pod>::namespaced(client.clone(), &ns)
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl Lab {
    fn path(&self, id: &str) -> String {
        format!("/api/v1/clusters/{id}/autoscaling")
    }

    async fn put(&self, who: &reqwest::Client, id: &str, body: Value) -> (StatusCode, Value) {
        call(who, &self.app, Method::PUT, &self.path(id), Some(body)).await
    }

    async fn get(&self, who: &reqwest::Client) -> Value {
        let (status, body) = call(who, &self.app, Method::GET, &self.path(&self.web), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    async fn quota(&self, max_nodes: u32) {
        let (status, body) = call(
            &self.olga,
            &self.app,
            Method::PUT,
            "/api/v1/tenants/team-a/quota",
            Some(json!({"max_nodes": max_nodes})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// Registers node `name` as its kubelet would: Ready, room for one CPU and 4 GiB, and
    /// schedulable.
    async fn node(&self, name: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let room = json!({"cpu": "1", "memory": "4Gi", "pods": "20"});
        let status = json!({"status": {"capacity": room, "allocatable": room,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now, "lastTransitionTime": now}]}});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
        // The admission plugin TaintNodesByCondition taints a new node not-ready; the node
        // lifecycle controller (not running here) takes the taint off once it is Ready.
        let untainted = json!({"spec": {"taints": null}});
        nodes
            .patch(name, &PatchParams::default(), &Patch::Merge(&untainted))
            .await
            .unwrap();
    }

    async fn node_names(&self) -> Vec<String> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut names: Vec<String> = nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// Deployment `web` of `replicas` pods asking for 600m CPU each: one fits on a node.
    async fn workload(&self, replicas: i32) {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), "default");
        let spec = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "kqueen.local/busybox:1",
                        "resources": {"requests": {"cpu": "600m", "memory": "64Mi"}}}]}}}});
        deployments
            .patch(
                "web",
                &PatchParams::apply("autoscaling-test").force(),
                &Patch::Apply(&spec),
            )
            .await
            .unwrap();
    }

    /// Waits (at most a minute) until the scheduler has said of `count` pods of `web` that
    /// they cannot be placed: a turn before that would decide on part of the workload.
    async fn unschedulable(&self, count: usize) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "default");
        let started = Instant::now();
        loop {
            let listed = pods
                .list(&ListParams::default().labels("app=web"))
                .await
                .unwrap();
            let waiting = listed
                .items
                .iter()
                .filter(|p| {
                    let conditions = p.status.as_ref().and_then(|s| s.conditions.as_ref());
                    conditions.is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c.type_ == "PodScheduled"
                                && c.status == "False"
                                && c.reason.as_deref() == Some("Unschedulable")
                        })
                    })
                })
                .count();
            if waiting >= count {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{waiting} of {} pods unschedulable, not {count}",
                listed.items.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The scale command's runs so far, `count node` a line.
    fn scaled(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("scaled"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().to_owned())
            .collect()
    }

    /// Waits (at most `limit`) until the scale command has run `runs` times and the cluster
    /// is Ready again, `nodes` asked for: the runs.
    async fn scaled_to(&self, runs: usize, nodes: u64, limit: Duration) -> Vec<String> {
        let started = Instant::now();
        loop {
            let path = format!("/api/v1/clusters/{}", self.web);
            let (_, c) = call(&self.tim, &self.app, Method::GET, &path, None).await;
            let asked = self.get(&self.tim).await["node_count"].clone();
            if self.scaled().len() >= runs && c["state"] == "ready" && asked == nodes {
                return self.scaled();
            }
            assert!(
                started.elapsed() < limit,
                "not scaled to {nodes} in {limit:?}: runs {:?}, state {}, autoscaling {}, \
                 timeline {:#?}\nscheduler: {}",
                self.scaled(),
                c["state"],
                self.get(&self.tim).await,
                self.timeline().await,
                self.kube.scheduler_log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits (at most `limit`) until the last decision says `words`: the decision.
    async fn decided(&self, words: &[&str], limit: Duration) -> String {
        let started = Instant::now();
        loop {
            let a = self.get(&self.tim).await;
            let said = a["last_decision"].as_str().unwrap_or_default().to_owned();
            if words.iter().all(|w| said.contains(w)) {
                return said;
            }
            assert!(
                started.elapsed() < limit,
                "no decision saying {words:?} in {limit:?}: {a}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The messages of cluster `web`'s timeline, oldest first.
    async fn timeline(&self) -> Vec<String> {
        timeline(&self.app, &self.tim, &self.web).await
    }
}

#[tokio::test]
async fn autoscaling_is_set_by_those_who_may_within_quota_and_bounds() {
    let Some(w) = lab().await else { return };
    w.node("w-1").await;
    // Anyone who sees the cluster sees its autoscaling: off, the provider can scale.
    let a = w.get(&w.amy).await;
    assert_eq!(a["settings"], Value::Null, "{a}");
    assert_eq!(
        (a["can_scale"].clone(), a["can_change"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(w.get(&w.tim).await["can_change"], true);
    let on = json!({"min_nodes": 1, "max_nodes": 3, "scale_down_after_secs": 60});
    // Members are refused, other tenants see nothing.
    let (status, body) = w.put(&w.amy, &w.web, on.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = w.put(&w.bob, &w.web, on.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = call(&w.bob, &w.app, Method::GET, &w.path(&w.web), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = call(&w.amy, &w.app, Method::DELETE, &w.path(&w.web), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Figures out of range name their field.
    for (body, said) in [
        (
            json!({"min_nodes": 0, "max_nodes": 3}),
            "min_nodes: must be between 1 and 1000",
        ),
        (
            json!({"min_nodes": 3, "max_nodes": 2}),
            "max_nodes: must be at least the minimum (3)",
        ),
        (
            json!({"min_nodes": 1, "max_nodes": 3, "scale_down_utilisation": 101}),
            "scale_down_utilisation: must be a percentage between 1 and 100",
        ),
        (
            json!({"min_nodes": 1, "max_nodes": 3, "scale_down_after_secs": 5}),
            "scale_down_after_secs: must be between 60 and 86400",
        ),
    ] {
        let (status, answer) = w.put(&w.tim, &w.web, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(message(status, &answer).starts_with(said), "{answer}");
    }
    let (status, body) = w.put(&w.tim, &w.web, json!({"min_nodes": "one"})).await;
    assert!(status.is_client_error(), "{status} {body}");
    // A provider that cannot scale cannot be autoscaled.
    let (status, body) = w.put(&w.bob, &w.plain, on.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        message(status, &body),
        "command clusters cannot be scaled, so they cannot be autoscaled"
    );
    // A tenant admin's maximum fits in the quota's room (the tenant's other clusters have
    // none); an operator's need not (the quota still caps every decision).
    w.quota(2).await;
    let (status, body) = w.put(&w.tim, &w.web, on.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(status, &body),
        "max_nodes: the tenant's node quota (2) leaves room for at most 2 nodes in this \
         cluster; an operator can set more"
    );
    let (status, body) = w
        .put(&w.tim, &w.web, json!({"min_nodes": 1, "max_nodes": 2}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["settings"]["scale_down_utilisation"], 50, "{body}");
    assert_eq!(body["settings"]["scale_down_after_secs"], 600, "{body}");
    assert_eq!(body["settings"]["updated_by"], "tim", "{body}");
    let (status, body) = w.put(&w.olga, &w.web, on.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["settings"]["max_nodes"], 3, "{body}");
    assert_eq!(w.get(&w.amy).await["settings"]["max_nodes"], 3);

    // Off, then off again: 404.
    let (status, _) = call(&w.tim, &w.app, Method::DELETE, &w.path(&w.web), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = call(&w.tim, &w.app, Method::DELETE, &w.path(&w.web), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(w.get(&w.amy).await["settings"], Value::Null);

    // Everything is audited, refusals too.
    let (status, audit) = call(
        &w.olga,
        &w.app,
        Method::GET,
        "/api/v1/audit?action=autoscale.set",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let rows = audit.as_array().unwrap();
    let outcome = |who: &str, result: &str| {
        rows.iter()
            .any(|r| r["actor"] == who && r["result"] == result)
    };
    assert!(outcome("amy", "denied"), "{audit}");
    assert!(outcome("tim", "success"), "{audit}");
    assert!(outcome("olga", "success"), "{audit}");

    // The command line: shows it, sets it (a member's refusal is 4), turns it off.
    let (amys, tims) = (Laptop::new(), Laptop::new());
    amys.login(&w.app, &w.amy).await;
    tims.login(&w.app, &w.tim).await;
    let ran = amys
        .kqueen(&["clusters", "autoscale", "web", "--min", "1", "--max", "2"])
        .await;
    assert_eq!(ran.code, 4, "{ran:?}");
    let ran = tims
        .kqueen(&["clusters", "autoscale", "web", "--min", "1"])
        .await;
    assert_eq!(ran.code, 2, "{ran:?}");
    let ran = tims
        .kqueen(&[
            "clusters",
            "autoscale",
            "team-a/web",
            "--min",
            "1",
            "--max",
            "2",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("1–2 nodes"), "{ran:?}");
    let ran = amys
        .kqueen(&["clusters", "autoscale", "web", "-o", "json"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let shown: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(shown["settings"]["max_nodes"], 2, "{shown}");
    let ran = tims
        .kqueen(&["clusters", "autoscale", "web", "--off"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = tims
        .kqueen(&["clusters", "autoscale", "web", "--off"])
        .await;
    assert_eq!(ran.code, 5, "{ran:?}");
    assert_eq!(w.scaled(), Vec::<String>::new(), "nothing was scaled");
}

#[tokio::test]
async fn pending_pods_grow_the_cluster_within_quota_and_idle_nodes_are_drained_away() {
    let Some(w) = lab().await else { return };
    w.node("w-1").await;
    // Room for one more node.
    w.quota(2).await;
    // Three pods, one per node: two wait. The quota allows one more node. Autoscaling comes
    // on once the scheduler has said so of both (a turn in between would see one).
    w.workload(3).await;
    w.unschedulable(2).await;
    let (status, body) = w
        .put(
            &w.olga,
            &w.web,
            json!({"min_nodes": 1, "max_nodes": 3, "scale_down_after_secs": 60}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let runs = w.scaled_to(1, 2, Duration::from_secs(60)).await;
    assert_eq!(runs, ["2"]);
    w.node("w-2").await;
    // Once the scheduler has placed a pod on it, one waits; the quota allows no more.
    // (The words of the earlier decision are not enough: it may still be the last one.)
    let held = w
        .decided(
            &["1 pod cannot be scheduled (web-", "quota allows no more"],
            Duration::from_secs(30),
        )
        .await;
    assert!(
        held.ends_with("1 more node needed, but the tenant's node quota allows no more nodes"),
        "{held}"
    );
    // Raised, the quota lets the third node come.
    w.quota(10).await;
    let runs = w.scaled_to(2, 3, Duration::from_secs(60)).await;
    assert_eq!(runs, ["2", "3"]);
    w.node("w-3").await;
    w.decided(&["no pod waits"], Duration::from_secs(30)).await;

    // The maximum lowered: one node goes, its pod evicted first (1.20 serves only
    // policy/v1beta1), its name given to the scale command, its Node object deleted.
    let (status, body) = w
        .put(
            &w.olga,
            &w.web,
            json!({"min_nodes": 1, "max_nodes": 2, "scale_down_after_secs": 60}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let runs = w.scaled_to(3, 2, Duration::from_secs(60)).await;
    let removed = runs[2]
        .strip_prefix("2 ")
        .unwrap_or_else(|| panic!("{runs:?}"))
        .to_owned();
    assert!(
        ["w-1", "w-2", "w-3"].contains(&removed.as_str()),
        "{runs:?}"
    );
    assert!(
        !w.node_names().await.contains(&removed),
        "{removed} is gone"
    );
    let said = w.timeline().await;
    assert!(
        said.iter()
            .any(|m| m.starts_with("evicted pod default/web-") && m.ends_with(&removed)),
        "{said:#?}"
    );

    // No pods: the two nodes left are underused; after the delay they go, one at a time,
    // down to the minimum.
    w.workload(0).await;
    w.decided(&["has been under 50% used for"], Duration::from_secs(30))
        .await;
    let runs = w.scaled_to(4, 1, Duration::from_secs(150)).await;
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs[3].starts_with("1 w-"), "{runs:?}");
    assert_eq!(w.node_names().await.len(), 1);
    w.decided(&["at its minimum of 1"], Duration::from_secs(30))
        .await;

    // Every decision is on the timeline, once; the node counts are charted.
    let timeline = w.timeline().await;
    let autoscaling: Vec<&String> = timeline
        .iter()
        .filter(|m| m.starts_with("Autoscaling: "))
        .collect();
    for words in [
        "(1 → 2), as many as the tenant's node quota allows",
        "but the tenant's node quota allows no more",
        "(2 → 3)",
        "above its maximum of 2",
        "it is drained and removed (2 → 1)",
    ] {
        assert!(
            autoscaling.iter().any(|m| m.contains(words)),
            "{words:?} in {autoscaling:#?}"
        );
    }
    let waiting = autoscaling
        .iter()
        .filter(|m| m.contains("it is removed after 1 min if it stays so"))
        .count();
    assert!(
        waiting <= 2,
        "a wait is said once per node: {autoscaling:#?}"
    );
    let a = w.get(&w.amy).await;
    let samples = a["samples"].as_array().unwrap();
    let counts: Vec<u64> = samples
        .iter()
        .map(|s| s["nodes"].as_u64().unwrap())
        .collect();
    assert!(counts.contains(&3) && counts.last() == Some(&1), "{a}");
    assert!(
        samples.iter().any(|s| s["pending_pods"].as_u64() > Some(0)),
        "{a}"
    );
}
