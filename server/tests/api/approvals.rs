//! Production clusters and the two-person rule over /api/v1, with the real engine and the
//! `command` provisioner: tenant admins mark a cluster production; deleting it, restoring a
//! backup over it and taking the mark off then answer 409 and are asked for instead; a
//! second tenant admin or operator (never the one who asked, never a member, never another
//! tenant) approves, and the action runs as theirs, audited with both names; a request is
//! refused, withdrawn, decided once, or expires. Against a real kube-apiserver, an approved
//! restore over a production cluster puts back what was deleted behind KQueen's back.

use std::time::Duration;

use kqueen_core::audit::{AuditEvent, AuditQuery, Outcome};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, define, installer, wait_for_state};
use crate::helpers::TestApp;
use crate::real_cluster::{message, world};

/// Tenants team-a (amy and carl, members; tim and ada, admins) and team-b (bea, member; bob,
/// admin), the operator olga, and the command provider `lab` with template `small` offered
/// to team-a.
struct Prod {
    app: TestApp,
    olga: reqwest::Client,
    amy: reqwest::Client,
    carl: reqwest::Client,
    tim: reqwest::Client,
    ada: reqwest::Client,
    bea: reqwest::Client,
    bob: reqwest::Client,
    scripts: tempfile::TempDir,
}

async fn prod() -> Prod {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let carl = app.user("carl", false, &[("team-a", "member")]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let ada = app.user("ada", false, &[("team-a", "admin")]).await;
    let bea = app.user("bea", false, &[("team-b", "member")]).await;
    let bob = app.user("bob", false, &[("team-b", "admin")]).await;
    let scripts = tempfile::tempdir().unwrap();
    let script = installer(scripts.path());
    let scale = held_scale(scripts.path());
    define(
        &app,
        &olga,
        json!({"name": "lab", "kind": "command",
            "settings": {"create_command": script, "scale_command": scale,
                         "timeout_seconds": 60}}),
        json!({"name": "small", "provider": "lab", "tenants": ["team-a"]}),
    )
    .await;
    Prod {
        app,
        olga,
        amy,
        carl,
        tim,
        ada,
        bea,
        bob,
        scripts,
    }
}

impl Prod {
    /// `method path` as `who`.
    async fn call(
        &self,
        who: &reqwest::Client,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        call(who, &self.app, method, path, body).await
    }

    /// Cluster `name` of team-a, requested by amy and Ready: its id.
    async fn cluster(&self, name: &str) -> String {
        let (status, body) = self
            .call(
                &self.amy,
                Method::POST,
                "/api/v1/clusters",
                Some(json!({"tenant": "team-a", "name": name, "template": "small"})),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let id = body["cluster"]["id"].as_str().unwrap().to_owned();
        wait_for_state(&self.app, &self.amy, &id, "ready").await;
        id
    }

    /// Cluster `name`, Ready and marked production by tim: its id.
    async fn production(&self, name: &str) -> String {
        let id = self.cluster(name).await;
        let (status, body) = self.mark(&self.tim, &id, true).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["production"], true, "{body}");
        id
    }

    async fn mark(&self, who: &reqwest::Client, id: &str, production: bool) -> (StatusCode, Value) {
        self.call(
            who,
            Method::PUT,
            &format!("/api/v1/clusters/{id}/production"),
            Some(json!({ "production": production })),
        )
        .await
    }

    /// `who` asks for approval of `request` on cluster `id`.
    async fn ask(&self, who: &reqwest::Client, id: &str, request: Value) -> (StatusCode, Value) {
        self.call(
            who,
            Method::POST,
            &format!("/api/v1/clusters/{id}/approvals"),
            Some(request),
        )
        .await
    }

    /// `who` asks for approval of `request` on cluster `id`, which is created pending: its id.
    async fn asked(&self, who: &reqwest::Client, id: &str, request: Value) -> String {
        let (status, body) = self.ask(who, id, request).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["state"], "pending", "{body}");
        assert_eq!(body["cluster_id"], id, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    async fn approve(&self, who: &reqwest::Client, request: &str) -> (StatusCode, Value) {
        self.call(
            who,
            Method::POST,
            &format!("/api/v1/approvals/{request}/approve"),
            None,
        )
        .await
    }

    async fn refuse(
        &self,
        who: &reqwest::Client,
        request: &str,
        reason: Option<&str>,
    ) -> (StatusCode, Value) {
        self.call(
            who,
            Method::POST,
            &format!("/api/v1/approvals/{request}/refuse"),
            Some(json!({ "reason": reason })),
        )
        .await
    }

    /// The ids of the requests `who` lists at `path`.
    async fn listed(&self, who: &reqwest::Client, path: &str) -> Vec<String> {
        let (status, list) = self.call(who, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn audit(&self, action: &str) -> Vec<AuditEvent> {
        self.app
            .audit(AuditQuery {
                action: Some(action.into()),
                ..Default::default()
            })
            .await
    }
}

/// A scale command that holds its cluster busy until the file `release` appears in `dir` (at
/// most 30 s).
fn held_scale(dir: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("scale.sh");
    let release = dir.join("release");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ni=0\nwhile [ ! -f '{}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n",
            release.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Waits (up to 60 s) until cluster `id` is gone.
async fn wait_until_gone(w: &Prod, id: &str) {
    // Bounded by time, not tries: on a loaded CI machine (every API test at once on two
    // cores) the engine's delete has taken more than ten seconds.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let path = format!("/api/v1/clusters/{id}");
    loop {
        let (status, body) = w.call(&w.tim, Method::GET, &path, None).await;
        if status == StatusCode::NOT_FOUND {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "cluster {id} was not deleted within 60 s: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `error` of an error answer with `status`, asserted.
fn refused(what: &str, want: StatusCode, (status, body): (StatusCode, Value)) -> String {
    assert_eq!(status, want, "{what}: {body}");
    message(status, &body)
}

#[tokio::test]
async fn a_production_cluster_is_deleted_only_once_a_second_admin_approves() {
    let w = prod().await;
    let id = w.cluster("web").await;
    let path = format!("/api/v1/clusters/{id}");

    // Only the tenant's admins mark it; another tenant does not see it.
    refused(
        "a member marks",
        StatusCode::FORBIDDEN,
        w.mark(&w.amy, &id, true).await,
    );
    refused(
        "another tenant's admin marks",
        StatusCode::NOT_FOUND,
        w.mark(&w.bob, &id, true).await,
    );
    let (status, marked) = w.mark(&w.tim, &id, true).await;
    assert_eq!(status, StatusCode::OK, "{marked}");
    assert_eq!(marked["production"], true, "{marked}");
    let (_, read) = w.call(&w.amy, Method::GET, &path, None).await;
    assert_eq!(read["production"], true, "{read}");
    let (_, list) = w.call(&w.amy, Method::GET, "/api/v1/clusters", None).await;
    assert_eq!(list["items"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["items"][0]["production"], true, "{list}");
    // Marking it again changes nothing.
    let (status, again) = w.mark(&w.ada, &id, true).await;
    assert_eq!(
        (status, again["production"].clone()),
        (StatusCode::OK, json!(true))
    );

    // A plain delete is refused with the way to ask.
    let m = refused(
        "delete a production cluster",
        StatusCode::CONFLICT,
        w.call(&w.amy, Method::DELETE, &path, None).await,
    );
    assert!(m.contains("approval") && m.contains("production"), "{m}");

    // A member asks; the same request again is refused while it waits.
    let request = json!({"action": "delete", "reason": "moved to the new region"});
    let (status, asked) = w.ask(&w.amy, &id, request.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{asked}");
    assert_eq!(
        (
            asked["state"].as_str(),
            asked["action"].as_str(),
            asked["requested_by"].as_str(),
            asked["cluster"].as_str(),
            asked["reason"].as_str(),
        ),
        (
            Some("pending"),
            Some("delete"),
            Some("amy"),
            Some("web"),
            Some("moved to the new region")
        ),
        "{asked}"
    );
    assert!(asked["operation"].is_null() && asked["decided_by"].is_null());
    let req = asked["id"].as_str().unwrap().to_owned();
    let m = refused(
        "the same request twice",
        StatusCode::CONFLICT,
        w.ask(&w.tim, &id, request).await,
    );
    assert!(m.contains("amy"), "{m}");

    // Who may not approve: the one who asked, another member, another tenant, nobody.
    refused(
        "the requester (a member) approves",
        StatusCode::FORBIDDEN,
        w.approve(&w.amy, &req).await,
    );
    refused(
        "another member approves",
        StatusCode::FORBIDDEN,
        w.approve(&w.carl, &req).await,
    );
    refused(
        "another tenant's admin approves",
        StatusCode::NOT_FOUND,
        w.approve(&w.bob, &req).await,
    );
    refused(
        "another tenant's member reads",
        StatusCode::NOT_FOUND,
        w.call(
            &w.bea,
            Method::GET,
            &format!("/api/v1/approvals/{req}"),
            None,
        )
        .await,
    );
    let (status, _) = w.approve(&w.app.browser(), &req).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "nobody approves");
    let (status, read) = w
        .call(
            &w.carl,
            Method::GET,
            &format!("/api/v1/approvals/{req}"),
            None,
        )
        .await;
    assert_eq!(
        (status, read["state"].as_str()),
        (StatusCode::OK, Some("pending"))
    );

    // A second admin approves: the deletion runs, as theirs.
    let (status, approved) = w.approve(&w.ada, &req).await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["state"], "approved", "{approved}");
    assert_eq!(approved["decided_by"], "ada", "{approved}");
    assert!(approved["decided_at"].is_string(), "{approved}");
    let op = approved["operation"]
        .as_str()
        .expect("the operation queued");
    let (_, detail) = w.call(&w.tim, Method::GET, &path, None).await;
    if detail["operations"].is_array() {
        let queued = detail["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == op)
            .unwrap_or_else(|| panic!("{op} in {detail}"));
        assert_eq!(queued["kind"], "delete", "{queued}");
        assert_eq!(queued["requested_by"], "ada", "{queued}");
    }
    // Decided once.
    let m = refused(
        "approved twice",
        StatusCode::CONFLICT,
        w.approve(&w.olga, &req).await,
    );
    assert!(m.contains("approved"), "{m}");
    wait_until_gone(&w, &id).await;
    // Once its cluster is gone too, the request says it was approved (the delete may have
    // ended before the check above: either way the answer is the same).
    let m = refused(
        "approved again after the delete",
        StatusCode::CONFLICT,
        w.approve(&w.olga, &req).await,
    );
    assert!(m.contains("is approved already"), "{m}");

    // The audit log names both people.
    let asked: Vec<_> = w.audit("approval.request").await;
    assert!(
        asked
            .iter()
            .any(|e| e.actor == "amy" && e.outcome == Outcome::Success && e.target == "web"),
        "{asked:?}"
    );
    let approvals = w.audit("approval.approve").await;
    let by_ada = approvals
        .iter()
        .find(|e| e.actor == "ada" && e.outcome == Outcome::Success)
        .unwrap_or_else(|| panic!("{approvals:?}"));
    let d = by_ada.detail.as_deref().unwrap_or_default();
    assert!(d.contains("amy") && d.contains(&req), "{d}");
    for who in ["amy", "carl"] {
        assert!(
            approvals
                .iter()
                .any(|e| e.actor == who && e.outcome == Outcome::Denied),
            "{who}'s refusal is audited: {approvals:?}"
        );
    }
    let deletes = w.audit("cluster.delete").await;
    let deleted = deletes
        .iter()
        .find(|e| e.actor == "ada" && e.outcome == Outcome::Success)
        .unwrap_or_else(|| panic!("{deletes:?}"));
    let d = deleted.detail.as_deref().unwrap_or_default();
    assert!(d.contains("approved request") && d.contains("amy"), "{d}");
    assert!(
        deletes
            .iter()
            .any(|e| e.actor == "amy" && e.outcome != Outcome::Success),
        "the plain delete is audited as refused: {deletes:?}"
    );
    // The request stays, approved, once its cluster is gone.
    let (status, list) = w
        .call(
            &w.tim,
            Method::GET,
            &format!("/api/v1/approvals/{req}"),
            None,
        )
        .await;
    assert_eq!(
        (status, list["state"].as_str()),
        (StatusCode::OK, Some("approved"))
    );
    w.app.stop().await;
}

#[tokio::test]
async fn requests_are_refused_withdrawn_listed_by_tenant_and_decided_once() {
    let w = prod().await;
    let id = w.production("web").await;
    let delete = json!({"action": "delete"});

    // Pending requests are listed for the tenant's people and operators, not other tenants.
    let first = w.asked(&w.amy, &id, delete.clone()).await;
    let pending = "/api/v1/approvals?pending=true";
    for who in [&w.tim, &w.amy, &w.olga] {
        assert_eq!(w.listed(who, pending).await, vec![first.clone()]);
    }
    for who in [&w.bob, &w.bea] {
        assert!(w.listed(who, pending).await.is_empty());
        assert!(w.listed(who, "/api/v1/approvals").await.is_empty());
    }
    refused(
        "another tenant lists the cluster's requests",
        StatusCode::NOT_FOUND,
        w.call(
            &w.bob,
            Method::GET,
            &format!("/api/v1/clusters/{id}/approvals"),
            None,
        )
        .await,
    );

    // Refused by a second admin, with the reason; then decided once.
    refused(
        "a member refuses another's request",
        StatusCode::FORBIDDEN,
        w.refuse(&w.carl, &first, None).await,
    );
    refused(
        "another tenant's admin refuses",
        StatusCode::NOT_FOUND,
        w.refuse(&w.bob, &first, None).await,
    );
    let (status, no) = w.refuse(&w.ada, &first, Some("not during the sale")).await;
    assert_eq!(status, StatusCode::OK, "{no}");
    assert_eq!(
        (
            no["state"].as_str(),
            no["decided_by"].as_str(),
            no["note"].as_str()
        ),
        (Some("refused"), Some("ada"), Some("not during the sale")),
        "{no}"
    );
    assert!(no["operation"].is_null(), "{no}");
    for (what, answer) in [
        ("approve a refused request", w.approve(&w.tim, &first).await),
        ("refuse it again", w.refuse(&w.tim, &first, None).await),
        ("withdraw it", w.refuse(&w.amy, &first, None).await),
    ] {
        let m = refused(what, StatusCode::CONFLICT, answer);
        assert!(m.contains("refused"), "{what}: {m}");
    }
    assert!(w.listed(&w.tim, pending).await.is_empty());
    assert_eq!(
        w.listed(&w.tim, "/api/v1/approvals").await,
        vec![first.clone()]
    );

    // Withdrawn by the one who asked (a refused request does not block a new one).
    let second = w.asked(&w.amy, &id, delete.clone()).await;
    let (status, back) = w.refuse(&w.amy, &second, Some("wrong cluster")).await;
    assert_eq!(status, StatusCode::OK, "{back}");
    assert_eq!(
        (
            back["state"].as_str(),
            back["decided_by"].as_str(),
            back["note"].as_str()
        ),
        (Some("withdrawn"), Some("amy"), Some("wrong cluster")),
        "{back}"
    );
    let m = refused(
        "approve a withdrawn request",
        StatusCode::CONFLICT,
        w.approve(&w.tim, &second).await,
    );
    assert!(m.contains("withdrawn"), "{m}");
    refused(
        "a refusal's reason over 500 characters",
        StatusCode::BAD_REQUEST,
        {
            let third = w.asked(&w.amy, &id, delete.clone()).await;
            w.refuse(&w.tim, &third, Some(&"x".repeat(501))).await
        },
    );

    // The cluster's requests, newest first; the cluster is untouched.
    let of_cluster = w
        .listed(&w.carl, &format!("/api/v1/clusters/{id}/approvals"))
        .await;
    assert_eq!(of_cluster.len(), 3, "{of_cluster:?}");
    assert_eq!(&of_cluster[1..], &[second.clone(), first.clone()]);
    let (_, cluster) = w
        .call(&w.amy, Method::GET, &format!("/api/v1/clusters/{id}"), None)
        .await;
    assert_eq!(
        (cluster["state"].as_str(), cluster["production"].as_bool()),
        (Some("ready"), Some(true)),
        "{cluster}"
    );
    // The timeline tells the story.
    let messages: Vec<&str> = cluster["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("ada refused amy's request") && m.contains("not during the sale")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("amy withdrew")),
        "{messages:?}"
    );
    let refusals = w.audit("approval.refuse").await;
    assert!(
        refusals
            .iter()
            .any(|e| e.actor == "ada" && e.outcome == Outcome::Success),
        "{refusals:?}"
    );
    w.app.stop().await;
}

#[tokio::test]
async fn the_production_mark_comes_off_only_with_a_second_persons_approval() {
    let w = prod().await;
    let id = w.production("web").await;

    let m = refused(
        "unmark a production cluster",
        StatusCode::CONFLICT,
        w.mark(&w.tim, &id, false).await,
    );
    assert!(m.contains("unprotect") && m.contains("approval"), "{m}");
    refused(
        "a member asks to unmark",
        StatusCode::FORBIDDEN,
        w.ask(&w.amy, &id, json!({"action": "unprotect"})).await,
    );
    let req = w
        .asked(
            &w.tim,
            &id,
            json!({"action": "unprotect", "reason": "demo over"}),
        )
        .await;

    // A tenant admin who asked cannot approve their own request; they are told why.
    let m = refused(
        "the requester (an admin) approves",
        StatusCode::FORBIDDEN,
        w.approve(&w.tim, &req).await,
    );
    assert!(m.contains("you asked for this"), "{m}");
    let (_, still) = w
        .call(
            &w.tim,
            Method::GET,
            &format!("/api/v1/approvals/{req}"),
            None,
        )
        .await;
    assert_eq!(still["state"], "pending", "{still}");

    // An operator approves: the mark is off, nothing queued; deleting is plain again.
    let (status, approved) = w.approve(&w.olga, &req).await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(
        (
            approved["state"].as_str(),
            approved["decided_by"].as_str(),
            approved["operation"].as_str()
        ),
        (Some("approved"), Some("olga"), None),
        "{approved}"
    );
    let path = format!("/api/v1/clusters/{id}");
    let (_, cluster) = w.call(&w.amy, Method::GET, &path, None).await;
    assert_eq!(cluster["production"], false, "{cluster}");
    let (status, unmarked) = w.mark(&w.tim, &id, false).await;
    assert_eq!(
        (status, unmarked["production"].clone()),
        (StatusCode::OK, json!(false))
    );
    let marks = w.audit("cluster.production").await;
    assert!(
        marks.iter().any(|e| e.actor == "olga"
            && e.outcome == Outcome::Success
            && e.detail.as_deref().is_some_and(|d| d.contains("tim"))),
        "{marks:?}"
    );
    let (status, body) = w.call(&w.amy, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    wait_until_gone(&w, &id).await;
    w.app.stop().await;
}

#[tokio::test]
async fn bad_requests_get_a_clear_client_error() {
    let w = prod().await;
    let id = w.cluster("web").await;

    let m = refused(
        "a request on a cluster that is not production",
        StatusCode::CONFLICT,
        w.ask(&w.amy, &id, json!({"action": "delete"})).await,
    );
    assert!(m.contains("not a production cluster"), "{m}");
    w.mark(&w.tim, &id, true).await;
    for (what, request, field) in [
        ("an unknown action", json!({"action": "explode"}), "action"),
        ("no action", json!({"action": ""}), "action"),
        (
            "a reason over 500 characters",
            json!({"action": "delete", "reason": "x".repeat(501)}),
            "reason",
        ),
        (
            "a reason with control characters",
            json!({"action": "delete", "reason": "a\u{7}b"}),
            "reason",
        ),
        (
            "a restore without a backup",
            json!({"action": "restore"}),
            "backup",
        ),
    ] {
        let m = refused(
            what,
            StatusCode::BAD_REQUEST,
            w.ask(&w.tim, &id, request).await,
        );
        assert!(m.contains(field), "{what}: {m}");
    }
    let (status, body) = w
        .ask(
            &w.tim,
            &id,
            json!({"action": "restore", "backup": uuid::Uuid::now_v7().to_string()}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a backup that does not exist: {body}"
    );
    // A reason of exactly 500 characters is fine.
    w.asked(
        &w.amy,
        &id,
        json!({"action": "delete", "reason": "y".repeat(500)}),
    )
    .await;

    // Unknown requests and clusters; nobody.
    for path in [
        format!("/api/v1/approvals/{}", uuid::Uuid::now_v7()),
        "/api/v1/approvals/not-a-uuid".to_owned(),
    ] {
        refused(
            &path,
            StatusCode::NOT_FOUND,
            w.call(&w.tim, Method::GET, &path, None).await,
        );
        let approve = format!("{path}/approve");
        refused(
            &approve,
            StatusCode::NOT_FOUND,
            w.call(&w.tim, Method::POST, &approve, None).await,
        );
    }
    refused(
        "a request on an unknown cluster",
        StatusCode::NOT_FOUND,
        w.ask(
            &w.tim,
            &uuid::Uuid::now_v7().to_string(),
            json!({"action": "delete"}),
        )
        .await,
    );
    let nobody = w.app.browser();
    for (method, path) in [
        (Method::GET, "/api/v1/approvals".to_owned()),
        (Method::GET, format!("/api/v1/clusters/{id}/approvals")),
        (Method::POST, format!("/api/v1/clusters/{id}/approvals")),
        (Method::PUT, format!("/api/v1/clusters/{id}/production")),
    ] {
        let (status, _) = w
            .call(
                &nobody,
                method.clone(),
                &path,
                Some(json!({"action": "delete", "production": true})),
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }

    // Every route is in the OpenAPI document.
    let doc: Value = w
        .app
        .get("/api/v1/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    for path in [
        "/api/v1/clusters/{id}/production",
        "/api/v1/clusters/{id}/approvals",
        "/api/v1/approvals",
        "/api/v1/approvals/{approval}",
        "/api/v1/approvals/{approval}/approve",
        "/api/v1/approvals/{approval}/refuse",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} in the OpenAPI document"
        );
    }
    w.app.stop().await;
}

/// An approval whose action cannot run (the cluster is busy with a scale) spends the request:
/// it ends `failed` with why, the cluster is left as it was, and it cannot be approved again.
#[tokio::test]
async fn an_approved_action_that_cannot_run_ends_the_request_failed() {
    let w = prod().await;
    let id = w.production("busy").await;
    let request = w
        .asked(
            &w.amy,
            &id,
            json!({"action": "delete", "reason": "retired"}),
        )
        .await;
    let (status, body) = w
        .call(
            &w.tim,
            Method::POST,
            &format!("/api/v1/clusters/{id}/scale"),
            Some(json!({"node_count": 2})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = w.approve(&w.ada, &request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["state"], "failed", "{body}");
    assert!(
        body["note"]
            .as_str()
            .is_some_and(|n| n.contains("another operation")),
        "{body}"
    );
    assert!(body["operation_id"].is_null(), "{body}");
    let again = refused(
        "approved twice",
        StatusCode::CONFLICT,
        w.approve(&w.olga, &request).await,
    );
    assert!(!again.is_empty());
    std::fs::write(w.scripts.path().join("release"), "").unwrap();
    let cluster = wait_for_state(&w.app, &w.tim, &id, "ready").await;
    assert_eq!(cluster["production"], true, "{cluster}");
    let approvals = w.audit("approval.approve").await;
    assert!(
        approvals.iter().any(|e| e.outcome == Outcome::Failure
            && e.detail
                .as_deref()
                .is_some_and(|d| d.contains("another operation"))),
        "{approvals:?}"
    );
}

#[tokio::test]
async fn a_request_nobody_decides_in_time_expires() {
    use kqueen_core::approval::{Approval, ApprovalAction, APPROVAL_HOURS};
    use kqueen_core::cluster::{ClusterEvent, EventKind};

    let w = prod().await;
    let id = w.production("web").await;
    // A request amy made a day and an hour ago, stored as the use case stores one.
    let cluster_id: uuid::Uuid = id.parse().unwrap();
    let old = w
        .app
        .on_server(move |s| async move {
            let store = s.kqueen.store().clone();
            let cluster = store.cluster(cluster_id).await.unwrap();
            let amy = kqueen_core::identity::Identity {
                user_id: uuid::Uuid::now_v7(),
                username: "amy".into(),
                email: None,
                display_name: None,
                is_operator: false,
                memberships: Vec::new(),
            };
            let then = kqueen_core::clock::now() - chrono::Duration::hours(APPROVAL_HOURS + 1);
            let request = Approval::new(
                cluster.tenant_id,
                cluster.id,
                cluster.name.as_str(),
                ApprovalAction::Delete,
                None,
                "long ago",
                &amy,
                then,
            );
            let event = ClusterEvent::new(cluster.id, None, EventKind::State, "asked", then);
            let audit = AuditEvent::now(
                &kqueen_core::Actor::system(),
                kqueen_core::audit::action::APPROVAL_REQUEST,
                cluster.name.as_str(),
                Outcome::Success,
            )
            .in_tenant(cluster.tenant_id);
            store
                .request_approval(&request, &event, &audit)
                .await
                .unwrap();
            request.id.to_string()
        })
        .await;

    let path = format!("/api/v1/approvals/{old}");
    let (status, read) = w.call(&w.tim, Method::GET, &path, None).await;
    assert_eq!(
        (status, read["state"].as_str()),
        (StatusCode::OK, Some("expired")),
        "{read}"
    );
    for (what, answer) in [
        ("approve an expired request", w.approve(&w.tim, &old).await),
        ("refuse it", w.refuse(&w.ada, &old, None).await),
    ] {
        let m = refused(what, StatusCode::CONFLICT, answer);
        assert!(m.contains("expired"), "{what}: {m}");
    }
    assert!(w
        .listed(&w.tim, "/api/v1/approvals?pending=true")
        .await
        .is_empty());
    let (_, all) = w.call(&w.tim, Method::GET, "/api/v1/approvals", None).await;
    assert_eq!(all[0]["state"], "expired", "{all}");

    // It blocks nothing: amy asks again, and this one is approved.
    let fresh = w.asked(&w.amy, &id, json!({"action": "delete"})).await;
    let (status, approved) = w.approve(&w.tim, &fresh).await;
    assert_eq!(
        (status, approved["state"].as_str()),
        (StatusCode::OK, Some("approved")),
        "{approved}"
    );
    wait_until_gone(&w, &id).await;
    w.app.stop().await;
}

/// Waits (up to a minute) until operation `op` of cluster `id` has ended: it.
async fn operation_ended(app: &TestApp, who: &reqwest::Client, id: &str, op: &str) -> Value {
    for _ in 0..600 {
        let (status, detail) = call(
            who,
            app,
            Method::GET,
            &format!("/api/v1/clusters/{id}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        let found = detail["operations"]
            .as_array()
            .and_then(|ops| ops.iter().find(|o| o["id"] == op).cloned());
        if let Some(o) = found {
            if o["state"] == "succeeded" || o["state"] == "failed" {
                return o;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("operation {op} never ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_restore_over_a_production_cluster_puts_back_what_was_lost() {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, DeleteParams, PostParams};

    let Some(w) = world().await else { return };
    let ada = w.app.user("ada", false, &[("team-a", "admin")]).await;
    let c = w.admin_client().await;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap();
    Api::<Namespace>::all(c.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(c.clone(), "shop");
    let settings: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "settings", "namespace": "shop"}, "data": {"color": "blue"}}),
    )
    .unwrap();
    maps.create(&PostParams::default(), &settings)
        .await
        .unwrap();
    let backup = w.back_up(false).await;
    let backup = backup["id"].as_str().unwrap().to_owned();
    let (status, marked) = call(
        &w.tim,
        &w.app,
        Method::PUT,
        &format!("/api/v1/clusters/{}/production", w.cluster),
        Some(json!({"production": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{marked}");

    // The settings are lost; a plain restore over the production cluster is refused.
    maps.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    let restore = format!("{}/{backup}/restore", w.backups());
    let (status, body) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &restore,
        Some(json!({"namespaces": ["shop"]})),
    )
    .await;
    let m = message(status, &body);
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(m.contains("approval") && m.contains("restore"), "{m}");

    // Asked for: checked as the restore will be; members may not.
    let approvals = format!("/api/v1/clusters/{}/approvals", w.cluster);
    let ask = |namespaces: Value| json!({"action": "restore", "backup": backup, "namespaces": namespaces});
    let (status, body) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &approvals,
        Some(ask(json!(["nope"]))),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(message(status, &body).contains("nope"));
    let (status, _) = call(
        &w.amy,
        &w.app,
        Method::POST,
        &approvals,
        Some(ask(json!(["shop"]))),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, asked) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &approvals,
        Some(ask(json!(["shop"]))),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{asked}");
    assert_eq!(
        (
            asked["action"].as_str(),
            asked["backup"].as_str(),
            asked["namespaces"].clone()
        ),
        (Some("restore"), Some(backup.as_str()), json!(["shop"])),
        "{asked}"
    );
    let req = asked["id"].as_str().unwrap().to_owned();

    // A second admin approves: the restore runs and the settings are back.
    let (status, approved) = call(
        &ada,
        &w.app,
        Method::POST,
        &format!("/api/v1/approvals/{req}/approve"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["state"], "approved", "{approved}");
    let op = approved["operation"].as_str().unwrap().to_owned();
    let ended = operation_ended(&w.app, &w.tim, &w.cluster, &op).await;
    assert_eq!(ended["state"], "succeeded", "{ended}");
    assert_eq!(ended["kind"], "restore", "{ended}");
    let restore_id = ended["target"].as_str().unwrap();
    let done = w.restored(&w.cluster, restore_id).await;
    assert_eq!(done["namespaces"], json!(["shop"]), "{done}");
    let back = maps.get("settings").await.unwrap();
    assert_eq!(back.data.unwrap()["color"], "blue");
    let restores = w
        .app
        .audit(AuditQuery {
            action: Some("backup.restore".into()),
            actor: Some("ada".into()),
            ..Default::default()
        })
        .await;
    assert!(
        restores.iter().any(|e| e.outcome == Outcome::Success
            && e.detail
                .as_deref()
                .is_some_and(|d| d.contains("approved request") && d.contains("tim"))),
        "{restores:?}"
    );
    w.app.stop().await;
}

/// The command line over the same API: tim marks a cluster production and asks to delete it;
/// his own approval is refused (exit 4); ada sees the request waiting and approves it, and the
/// cluster goes.
#[tokio::test]
async fn the_command_line_marks_asks_and_approves() {
    let w = prod().await;
    let id = w.cluster("cli-prod").await;
    let (tims, adas) = (crate::cli::Laptop::new(), crate::cli::Laptop::new());
    tims.login(&w.app, &w.tim).await;
    adas.login(&w.app, &w.ada).await;

    let ran = tims
        .kqueen(&["approvals", "protect", "team-a/cli-prod"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("is production"), "{ran:?}");
    let ran = tims
        .kqueen(&["clusters", "delete", "team-a/cli-prod", "--yes"])
        .await;
    assert_eq!(
        ran.code, 6,
        "a production cluster's delete is refused: {ran:?}"
    );
    assert!(ran.stderr.contains("approval"), "{ran:?}");
    let ran = tims
        .kqueen(&[
            "approvals",
            "request",
            "team-a/cli-prod",
            "--action",
            "delete",
            "--reason",
            "moved to eu-2",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("pending"), "{ran:?}");
    let ran = adas.kqueen(&["approvals", "list", "-o", "json"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let waiting: Value = serde_json::from_str(&ran.stdout).unwrap();
    let request = waiting[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(waiting[0]["reason"], "moved to eu-2", "{waiting}");
    assert_eq!(waiting[0]["cluster_id"], id.as_str(), "{waiting}");

    let ran = tims.kqueen(&["approvals", "approve", &request]).await;
    assert_eq!(ran.code, 4, "the one who asked cannot approve: {ran:?}");
    assert!(ran.stderr.contains("you asked for this"), "{ran:?}");
    let ran = adas.kqueen(&["approvals", "approve", &request]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("approved by ada"), "{ran:?}");
    wait_until_gone(&w, &id).await;
    let ran = adas
        .kqueen(&["approvals", "list", "--all", "-o", "json"])
        .await;
    let all: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(all[0]["state"], "approved", "{all}");
}
