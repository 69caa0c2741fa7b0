//! Replacing a dead node over /api/v1 and the command line, against a real kube-apiserver
//! (v1.20.2) that a `command` provider's create command hands KQueen as a cluster. No node
//! lifecycle controller runs: the test plays the kubelets, creating Node objects and setting
//! their Ready condition itself. A tenant admin has a node that is not Ready replaced: the
//! engine removes it from the cluster and runs the provider's `replace_command` with the
//! node's name; a Ready node, a name the cluster does not have, a name that is no node name
//! and a provider without a replace command are refused with what the API documents, members
//! get 403, other tenants 404; everything is on the timeline and in the audit log. An operator
//! does it with `kqueen clusters replace-node`, whose refusals keep their exit codes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kqueen_core::audit::AuditQuery;
use kube::api::{Api, Patch, PatchParams, PostParams};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::cli::Laptop;
use crate::clusters::{call, define, timeline, wait_for_state};
use crate::helpers::TestApp;
use crate::real_cluster::message;
use kqueen_testkit::apiserver::RealApiServer;

/// When the dead nodes went (their Ready condition's last transition).
const DIED_AT: &str = "2026-01-05T08:00:00Z";

/// Tenants team-a (amy, member; tim, admin) and team-b (bob, admin), the operator olga; the
/// real API server as cluster `prod` of provider `lab` (with a replace command) and as
/// cluster `plain` of provider `bare` (without one), both of team-a and Ready.
struct Lab {
    app: TestApp,
    kube: RealApiServer,
    olga: reqwest::Client,
    amy: reqwest::Client,
    tim: reqwest::Client,
    bob: reqwest::Client,
    prod: String,
    plain: String,
    /// The scripts, and the replace command's record of its runs.
    dir: tempfile::TempDir,
}

/// An executable shell script `name` in `dir` holding `body`: its path.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nset -eu\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

async fn lab() -> Option<Lab> {
    // Prints why when it cannot start (no KQUEEN_TEST_KUBE_APISERVER): the test then skips.
    // Without the node lifecycle controller, nothing but the test changes a node's Ready.
    let kube = RealApiServer::start_with_controllers("*,-nodelifecycle").await?;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let bob = app.user("bob", false, &[("team-b", "admin")]).await;

    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.kubeconfig");
    std::fs::write(&admin, kube.admin_kubeconfig()).unwrap();
    let create = script(
        dir.path(),
        "create.sh",
        &format!("cp '{}' \"$KQ_KUBECONFIG\"\n", admin.display()),
    );
    let replace = script(
        dir.path(),
        "replace.sh",
        &format!(
            "echo \"$KQ_ACTION $KQ_NODE_NAME\" >> '{}'\n",
            dir.path().join("replaced").display()
        ),
    );
    define(
        &app,
        &olga,
        json!({"name": "lab", "kind": "command", "settings": {
            "create_command": create, "replace_command": replace, "timeout_seconds": 60}}),
        json!({"name": "small", "provider": "lab", "tenants": ["team-a"]}),
    )
    .await;
    define(
        &app,
        &olga,
        json!({"name": "bare", "kind": "command",
            "settings": {"create_command": create, "timeout_seconds": 60}}),
        json!({"name": "bare", "provider": "bare", "tenants": ["team-a"]}),
    )
    .await;
    let mut ids = Vec::new();
    for (name, template) in [("prod", "small"), ("plain", "bare")] {
        let (status, body) = call(
            &tim,
            &app,
            Method::POST,
            "/api/v1/clusters",
            Some(json!({"tenant": "team-a", "name": name, "template": template})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let id = body["cluster"]["id"].as_str().unwrap().to_owned();
        wait_for_state(&app, &tim, &id, "ready").await;
        ids.push(id);
    }
    let [prod, plain] = <[String; 2]>::try_from(ids).unwrap();
    Some(Lab {
        app,
        kube,
        olga,
        amy,
        tim,
        bob,
        prod,
        plain,
        dir,
    })
}

impl Lab {
    /// The API server's Nodes, with its admin's rights (behind KQueen's back).
    async fn nodes(&self) -> Api<Node> {
        let parsed =
            kqueen_core::kubernetes::parse_kubeconfig(&self.kube.admin_kubeconfig(), None, false)
                .unwrap();
        let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
            .await
            .unwrap();
        Api::all(client)
    }

    /// Registers node `name` as a kubelet would, then sets its Ready condition (the status
    /// subresource): `ready` True, False or Unknown, with `reason` and `message`.
    async fn node(&self, name: &str, ready: &str, reason: &str, message: &str) {
        let nodes = self.nodes().await;
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
        let seen = if ready == "True" {
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
        } else {
            DIED_AT.to_owned()
        };
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": ready,
            "reason": reason, "message": message,
            "lastHeartbeatTime": seen, "lastTransitionTime": seen}]}});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }

    /// `who` asks for node `node` of cluster `id` to be replaced.
    async fn replace(&self, who: &reqwest::Client, id: &str, node: &str) -> (StatusCode, Value) {
        let path = format!("/api/v1/clusters/{id}/nodes/{node}/replace");
        call(who, &self.app, Method::POST, &path, None).await
    }

    /// Waits (up to a minute) until operation `op` of cluster `prod` has ended: it.
    async fn ended(&self, op: &str) -> Value {
        for _ in 0..600 {
            let path = format!("/api/v1/clusters/{}", self.prod);
            let (status, detail) = call(&self.tim, &self.app, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{detail}");
            let found = detail["operations"]
                .as_array()
                .and_then(|ops| ops.iter().find(|o| o["id"] == op).cloned());
            if let Some(o) = found.filter(|o| o["state"] == "succeeded" || o["state"] == "failed") {
                return o;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("operation {op} never ended");
    }

    /// The messages of cluster `prod`'s timeline, oldest first.
    async fn timeline(&self) -> Vec<String> {
        timeline(&self.app, &self.tim, &self.prod).await
    }

    /// What the replace command was run for, one `action node` a line.
    fn replaced(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("replaced")).unwrap_or_default()
    }
}

#[tokio::test]
async fn a_dead_node_is_removed_and_its_machine_replaced_a_ready_one_never() {
    let Some(w) = lab().await else { return };
    let dead = "Kubelet stopped posting node status.";
    w.node("dead-1", "Unknown", "NodeStatusUnknown", dead).await;
    w.node("dead-2", "False", "KubeletNotReady", "PLEG is not healthy")
        .await;
    w.node(
        "alive-1",
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    )
    .await;

    // Who may: tenant admins and operators; members are refused, other tenants see nothing.
    let (status, body) = w.replace(&w.amy, &w.prod, "dead-1").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = w.replace(&w.bob, &w.prod, "dead-1").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // What: a node that is not Ready, of this cluster, asked by its name.
    let (status, body) = w.replace(&w.tim, &w.prod, "alive-1").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        message(status, &body),
        "node alive-1 is Ready: only a node that is not Ready can be replaced"
    );
    let (status, body) = w.replace(&w.tim, &w.prod, "nope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(status, &body),
        "node: is not a node of this cluster"
    );
    let (status, body) = w.replace(&w.tim, &w.prod, "Bad_Name").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(message(status, &body).starts_with("node: "), "{body}");
    // A provider without a replace command cannot, and says so before anything is asked.
    let (status, body) = w.replace(&w.tim, &w.plain, "dead-1").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        message(status, &body),
        "the provider of plain cannot replace nodes"
    );
    for (id, can) in [(&w.plain, false), (&w.prod, true)] {
        let path = format!("/api/v1/clusters/{id}");
        let (status, detail) = call(&w.tim, &w.app, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        assert_eq!(detail["capabilities"]["replace_node"], can, "{detail}");
    }
    assert_eq!(w.replaced(), "", "nothing ran for a refusal");
    let nodes = w.nodes().await;
    for name in ["dead-1", "dead-2", "alive-1"] {
        assert!(nodes.get_opt(name).await.unwrap().is_some(), "{name}");
    }

    // The tenant admin has dead-1 replaced: removed from the cluster, then the machine.
    let (status, op) = w.replace(&w.tim, &w.prod, "dead-1").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{op}");
    assert_eq!(
        (op["kind"].as_str(), op["target"].as_str()),
        (Some("replace-node"), Some("dead-1")),
        "{op}"
    );
    let ended = w.ended(op["id"].as_str().unwrap()).await;
    assert_eq!(ended["state"], "succeeded", "{ended}");
    let detail = wait_for_state(&w.app, &w.tim, &w.prod, "ready").await;
    assert_eq!(detail["state"], "ready");
    assert!(nodes.get_opt("dead-1").await.unwrap().is_none());
    for name in ["dead-2", "alive-1"] {
        assert!(nodes.get_opt(name).await.unwrap().is_some(), "{name}");
    }
    assert_eq!(w.replaced(), "replace-node dead-1\n");
    let timeline = w.timeline().await;
    for said in [
        "Replacement of node dead-1 requested by tim".to_owned(),
        "Removing node dead-1 from the cluster".to_owned(),
        format!("removed node dead-1 (not Ready since 2026-01-05 08:00:00 UTC: {dead})"),
        "Ready: node dead-1 replaced".to_owned(),
    ] {
        assert!(timeline.contains(&said), "{said:?} in {timeline:#?}");
    }
    // Gone from the cluster now: a second request names no node of it.
    let (status, body) = w.replace(&w.tim, &w.prod, "dead-1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The command line: a member's refusal is 4, a Ready node's 6; the operator has dead-2
    // replaced and gets the operation as JSON.
    let (amys, olgas) = (Laptop::new(), Laptop::new());
    amys.login(&w.app, &w.amy).await;
    olgas.login(&w.app, &w.olga).await;
    let ran = amys
        .kqueen(&["clusters", "replace-node", "prod", "dead-2"])
        .await;
    assert_eq!(ran.code, 4, "{ran:?}");
    let ran = olgas
        .kqueen(&["clusters", "replace-node", "team-a/prod", "alive-1"])
        .await;
    assert_eq!(ran.code, 6, "{ran:?}");
    assert!(
        ran.stderr
            .contains("node alive-1 is Ready: only a node that is not Ready can be replaced"),
        "{ran:?}"
    );
    let ran = olgas
        .kqueen(&["clusters", "replace-node", "plain", "dead-2"])
        .await;
    assert_eq!(ran.code, 6, "{ran:?}");
    assert!(ran.stderr.contains("cannot replace nodes"), "{ran:?}");
    let ran = olgas
        .kqueen(&[
            "clusters",
            "replace-node",
            "team-a/prod",
            "dead-2",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let op: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        (op["kind"].as_str(), op["target"].as_str()),
        (Some("replace-node"), Some("dead-2")),
        "{ran:?}"
    );
    assert_eq!(op["requested_by"], "olga", "{ran:?}");
    let ended = w.ended(op["id"].as_str().unwrap()).await;
    assert_eq!(ended["state"], "succeeded", "{ended}");
    assert!(nodes.get_opt("dead-2").await.unwrap().is_none());
    assert!(nodes.get_opt("alive-1").await.unwrap().is_some());
    assert_eq!(w.replaced(), "replace-node dead-1\nreplace-node dead-2\n");
    let timeline = w.timeline().await;
    for said in [
        "removed node dead-2 (not Ready since 2026-01-05 08:00:00 UTC: PLEG is not healthy)",
        "Ready: node dead-2 replaced",
    ] {
        assert!(
            timeline.iter().any(|m| m == said),
            "{said:?} in {timeline:#?}"
        );
    }
    // Its table answer is a line saying what is being replaced.
    w.node("dead-3", "Unknown", "NodeStatusUnknown", dead).await;
    wait_for_state(&w.app, &w.tim, &w.prod, "ready").await;
    let ran = olgas
        .kqueen(&["clusters", "replace-node", &w.prod, "dead-3"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(
        ran.stdout
            .starts_with("replacing node dead-3 of team-a/prod (operation "),
        "{ran:?}"
    );
    let id = ran.stdout.trim().trim_end_matches(')').rsplit(' ').next();
    let ended = w.ended(id.unwrap()).await;
    assert_eq!(ended["state"], "succeeded", "{ended}");

    // Audited: the admin's and the operator's requests, the member's and the other tenant's
    // refusals, the refused names and nodes.
    let events = w
        .app
        .audit(AuditQuery {
            action: Some("cluster.replace_node".into()),
            ..Default::default()
        })
        .await;
    let seen: Vec<(&str, &str, Option<&str>)> = events
        .iter()
        .map(|e| (e.actor.as_str(), e.outcome.as_str(), e.detail.as_deref()))
        .collect();
    for want in [
        ("tim", "success", Some("dead-1")),
        ("olga", "success", Some("dead-2")),
        ("olga", "success", Some("dead-3")),
    ] {
        assert!(seen.contains(&want), "{want:?} in {seen:#?}");
    }
    for (who, outcome) in [
        ("amy", "denied"),
        ("bob", "denied"),
        ("tim", "failure"),
        ("olga", "failure"),
    ] {
        assert!(
            seen.iter().any(|(a, o, _)| (*a, *o) == (who, outcome)),
            "{who} {outcome} in {seen:#?}"
        );
    }
    w.app.stop().await;
}
