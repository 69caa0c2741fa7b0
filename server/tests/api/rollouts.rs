//! Upgrades in waves over /api/v1 and the command line, with the real engine running the
//! upgrades: clusters of a `command` provider whose upgrade script logs when it starts and
//! ends, waits while the test holds a gate file, and fails for cluster a3. The engine's
//! rollout turn comes every 100 ms. Covered: the plan (waves of the size asked, production
//! last, what is left out and why); waves one after the other; a failure pausing the rollout
//! with its reason while later waves wait; resume to completion; pause and abort; every
//! refusal (400 naming the field, 401, 403, 404, 409) and the CLI's exit codes; the timeline
//! and the audit trail.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kqueen_core::audit::AuditQuery;
use kqueen_testkit::TestDatabase;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::cli::Laptop;
use crate::clusters::{call, define, installer, timeline, wait_for_state};
use crate::helpers::TestApp;
use crate::real_cluster::message;

/// Tenants team-a (amy, member; tim, admin) and team-b (bob, admin), the operator olga.
/// Provider `lab` upgrades (`upgrade.sh`), provider `frozen` cannot. team-a: a0 (production),
/// a1..a4 and f1 (frozen) at 1.20, d1 at 1.21; team-b: b1 at 1.20. All Ready.
struct Lab {
    app: TestApp,
    olga: reqwest::Client,
    amy: reqwest::Client,
    tim: reqwest::Client,
    bob: reqwest::Client,
    /// Cluster name -> id.
    ids: BTreeMap<&'static str, String>,
    dir: tempfile::TempDir,
}

const CLUSTERS: [(&str, &str, &str, &str); 8] = [
    ("team-a", "a0", "small", "1.20"),
    ("team-a", "a1", "small", "1.20"),
    ("team-a", "a2", "small", "1.20"),
    ("team-a", "a3", "small", "1.20"),
    ("team-a", "a4", "small", "1.20"),
    ("team-a", "d1", "small", "1.21"),
    ("team-a", "f1", "fixed", "1.20"),
    ("team-b", "b1", "small", "1.20"),
];

/// How a3's upgrade fails.
const A3_FAILS: &str = "the control plane of a3 did not come back";

async fn lab() -> Lab {
    let app = TestApp::spawn_with_engine(
        TestDatabase::sqlite(),
        |_, _| {},
        |e| e.rollout_interval = Duration::from_millis(100),
    )
    .await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let bob = app.user("bob", false, &[("team-b", "admin")]).await;

    let dir = tempfile::tempdir().unwrap();
    let create = installer(dir.path());
    let (log, hold) = (dir.path().join("upgrades"), dir.path().join("hold"));
    let upgrade = dir.path().join("upgrade.sh");
    std::fs::write(
        &upgrade,
        format!(
            "#!/bin/sh\nset -eu\n\
             echo \"start $KQ_CLUSTER_NAME $KQ_KUBERNETES_VERSION\" >> '{log}'\n\
             while [ -e '{hold}' ]; do sleep 0.05; done\n\
             if [ \"$KQ_CLUSTER_NAME\" = a3 ]; then echo '{A3_FAILS}' >&2; exit 1; fi\n\
             echo \"end $KQ_CLUSTER_NAME\" >> '{log}'\n",
            log = log.display(),
            hold = hold.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&upgrade, std::fs::Permissions::from_mode(0o755)).unwrap();
    define(
        &app,
        &olga,
        json!({"name": "lab", "kind": "command", "settings": {"create_command": create,
            "upgrade_command": upgrade.to_string_lossy(), "timeout_seconds": 60}}),
        json!({"name": "small", "provider": "lab", "tenants": ["team-a", "team-b"]}),
    )
    .await;
    define(
        &app,
        &olga,
        json!({"name": "frozen", "kind": "command",
            "settings": {"create_command": create, "timeout_seconds": 60}}),
        json!({"name": "fixed", "provider": "frozen", "tenants": ["team-a"]}),
    )
    .await;
    let mut ids = BTreeMap::new();
    for (tenant, name, template, version) in CLUSTERS {
        let who = if tenant == "team-a" { &tim } else { &bob };
        let (status, body) = call(
            who,
            &app,
            Method::POST,
            "/api/v1/clusters",
            Some(json!({"tenant": tenant, "name": name, "template": template,
                "parameters": {"kubernetes_version": version}})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}: {body}");
        ids.insert(name, body["cluster"]["id"].as_str().unwrap().to_owned());
    }
    for (tenant, name, _, _) in CLUSTERS {
        let who = if tenant == "team-a" { &tim } else { &bob };
        wait_for_state(&app, who, &ids[name], "ready").await;
    }
    let path = format!("/api/v1/clusters/{}/production", ids["a0"]);
    let (status, body) = call(
        &tim,
        &app,
        Method::PUT,
        &path,
        Some(json!({"production": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Lab {
        app,
        olga,
        amy,
        tim,
        bob,
        ids,
        dir,
    }
}

impl Lab {
    async fn post(&self, who: &reqwest::Client, path: &str, body: Value) -> (StatusCode, Value) {
        call(who, &self.app, Method::POST, path, Some(body)).await
    }

    async fn get(&self, who: &reqwest::Client, path: &str) -> (StatusCode, Value) {
        call(who, &self.app, Method::GET, path, None).await
    }

    /// Rollout `id` as tim sees it.
    async fn rollout(&self, id: &str) -> Value {
        let (status, body) = self.get(&self.tim, &format!("/api/v1/rollouts/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Waits (at most 30 s) until rollout `id` is as `done` says: it then.
    async fn until(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let r = self.rollout(id).await;
            if done(&r) {
                return r;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{what} not within 30 s: {r:#}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (at most 30 s) until the upgrade log holds `line`.
    async fn logged(&self, line: &str) {
        let started = Instant::now();
        while !self.log().iter().any(|l| l == line) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{line:?} not logged within 30 s: {:?}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The upgrade script's lines, `start <cluster> <version>` and `end <cluster>`.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("upgrades"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn hold(&self) -> PathBuf {
        self.dir.path().join("hold")
    }

    /// Upgrades wait until [`Lab::release`].
    fn gate(&self) {
        std::fs::write(self.hold(), "").unwrap();
    }

    fn release(&self) {
        std::fs::remove_file(self.hold()).unwrap();
    }

    /// The messages of cluster `name`'s timeline.
    async fn timeline(&self, name: &str) -> Vec<String> {
        timeline(&self.app, &self.olga, &self.ids[name]).await
    }
}

/// A plan's waves as cluster names.
fn waves(plan: &Value) -> Vec<Vec<&str>> {
    plan["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w.as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect()
        })
        .collect()
}

/// A plan's clusters left out, with why.
fn excluded(plan: &Value) -> Vec<(&str, &str)> {
    plan["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["cluster"]["name"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect()
}

/// A rollout's clusters: name -> (wave, state).
fn members(rollout: &Value) -> BTreeMap<&str, (u64, &str)> {
    rollout["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["cluster"].as_str().unwrap(),
                (m["wave"].as_u64().unwrap(), m["state"].as_str().unwrap()),
            )
        })
        .collect()
}

fn member<'a>(rollout: &'a Value, name: &str) -> &'a Value {
    rollout["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["cluster"] == name)
        .unwrap_or_else(|| panic!("{name} in {rollout:#}"))
}

fn upgrading(rollout: &Value) -> bool {
    members(rollout).values().any(|(_, s)| *s == "upgrading")
}

#[tokio::test]
async fn waves_run_one_after_another_a_failure_pauses_and_resume_completes() {
    let w = lab().await;
    let team_a = json!({"tenant": "team-a", "target_version": "1.21", "wave_size": 2});

    // The plan: waves of two, the production cluster last; what is left out says why.
    let (status, plan) = w
        .post(&w.tim, "/api/v1/rollouts/plan", team_a.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(
        waves(&plan),
        [vec!["a1", "a2"], vec!["a3", "a4"], vec!["a0"]]
    );
    assert_eq!(
        excluded(&plan),
        [
            ("d1", "it runs 1.21 already"),
            ("f1", "its provider (command) cannot upgrade clusters")
        ]
    );
    let a1 = &plan["waves"][0][0];
    assert_eq!(
        a1,
        &json!({"id": w.ids["a1"], "name": "a1", "tenant": "team-a", "provider": "lab",
            "version": "1.20", "state": "ready", "production": false})
    );
    assert_eq!(plan["waves"][2][0]["production"], true, "{plan}");
    // The portal's preview sends the same plan (one set of wire types, filled twice until
    // the core fills them: see server/src/api/rollouts.rs).
    let page = w
        .app
        .server_fn(
            &w.tim,
            "rollouts",
            &[
                ("tenant", "team-a"),
                ("target_version", "1.21"),
                ("wave_size", "2"),
                ("preview", "true"),
            ],
        )
        .await;
    assert_eq!(page["plan"], plan, "{page:#}");
    // Filters: the provider and the version (1.20 takes 1.20.x) narrow it; 3 at a time.
    let narrow = json!({"tenant": "team-a", "provider": "lab", "version": "1.20",
        "target_version": "v1.21.0", "wave_size": 3});
    let (status, plan) = w.post(&w.tim, "/api/v1/rollouts/plan", narrow).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(waves(&plan), [vec!["a1", "a2", "a3"], vec!["a4", "a0"]]);
    assert_eq!(excluded(&plan), []);
    // Operators plan across the fleet.
    let fleet = json!({"target_version": "1.21", "wave_size": 100});
    let (status, plan) = w.post(&w.olga, "/api/v1/rollouts/plan", fleet).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(waves(&plan), [vec!["a1", "a2", "a3", "a4", "b1", "a0"]]);
    // A plan writes nothing.
    let (status, list) = w.get(&w.olga, "/api/v1/rollouts").await;
    assert_eq!((status, list), (StatusCode::OK, json!([])));

    // Started while upgrades are held: wave 1 runs, the later waves wait for it.
    w.gate();
    let start = json!({"tenant": "team-a", "version": "1.20", "target_version": "1.21",
        "wave_size": 2});
    let (status, started) = w.post(&w.tim, "/api/v1/rollouts", start).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    for (field, want) in [
        ("state", json!("running")),
        ("tenant", json!("team-a")),
        ("provider", Value::Null),
        ("version", json!("1.20")),
        ("target_version", json!("1.21")),
        ("wave_size", json!(2)),
        ("wave", json!(1)),
        ("waves", json!(3)),
        ("created_by", json!("tim")),
        ("reason", Value::Null),
    ] {
        assert_eq!(started[field], want, "{field}: {started:#}");
    }
    assert_eq!(
        started["progress"],
        json!({"waiting": 3, "upgrading": 2, "upgraded": 0, "failed": 0, "skipped": 0,
            "total": 5, "percent": 0})
    );
    let want: BTreeMap<&str, (u64, &str)> = [
        ("a1", (1, "upgrading")),
        ("a2", (1, "upgrading")),
        ("a3", (2, "waiting")),
        ("a4", (2, "waiting")),
        ("a0", (3, "waiting")),
    ]
    .into();
    assert_eq!(members(&started), want);
    let a1 = member(&started, "a1");
    assert_eq!(
        (&a1["cluster_id"], &a1["tenant"], &a1["from_version"]),
        (&json!(w.ids["a1"]), &json!("team-a"), &json!("1.20"))
    );
    assert!(a1["operation"].is_string(), "{a1}");
    assert!(member(&started, "a3")["operation"].is_null());
    w.logged("start a1 1.21").await;
    w.logged("start a2 1.21").await;
    // Several turns later, wave 2 still waits for wave 1.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let held = w.rollout(&id).await;
    assert_eq!(
        (&held["wave"], &held["state"]),
        (&json!(1), &json!("running"))
    );
    assert_eq!(members(&held), want);
    assert_eq!(w.log().len(), 2, "{:?}", w.log());

    // Released: wave 1 ends, wave 2 starts; a3 fails and pauses the rollout, a4's upgrade
    // finishes, wave 3 waits.
    w.release();
    let paused = w
        .until(&id, "paused at a3", |r| {
            r["state"] == "paused" && !upgrading(r)
        })
        .await;
    let reason = paused["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        format!("wave 2 of 3: a3: upgrade command exited with status 1: {A3_FAILS}")
    );
    assert_eq!(paused["wave"], 2);
    let want: BTreeMap<&str, (u64, &str)> = [
        ("a1", (1, "upgraded")),
        ("a2", (1, "upgraded")),
        ("a3", (2, "failed")),
        ("a4", (2, "upgraded")),
        ("a0", (3, "waiting")),
    ]
    .into();
    assert_eq!(members(&paused), want);
    assert!(
        member(&paused, "a3")["reason"]
            .as_str()
            .unwrap()
            .ends_with(A3_FAILS),
        "{paused:#}"
    );
    assert_eq!(paused["progress"]["percent"], 80, "{paused:#}");
    // Wave 2 started only after both clusters of wave 1 had ended; wave 3 not at all.
    let log = w.log();
    let at = |line: &str| log.iter().position(|l| l == line).unwrap();
    for first in ["end a1", "end a2"] {
        for second in ["start a3 1.21", "start a4 1.21"] {
            assert!(at(first) < at(second), "{first} before {second}: {log:?}");
        }
    }
    assert!(!log.iter().any(|l| l.starts_with("start a0")), "{log:?}");
    wait_for_state(&w.app, &w.tim, &w.ids["a3"], "error").await;
    // Paused, it stays paused: no turn starts wave 3.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(members(&w.rollout(&id).await), want);

    // Resumed: a3 is in Error and stays failed; wave 3 runs and the rollout completes.
    let path = format!("/api/v1/rollouts/{id}/resume");
    let (status, resumed) = w.post(&w.tim, &path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["state"], "running", "{resumed:#}");
    assert_eq!(resumed["wave"], 3, "{resumed:#}");
    let (status, body) = w.post(&w.tim, &path, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        message(status, &body),
        "the rollout is running: it cannot be resumed"
    );
    let done = w
        .until(&id, "completed", |r| r["state"] == "completed")
        .await;
    assert_eq!(done["reason"], "4 upgraded, 1 failed", "{done:#}");
    assert_eq!((&done["wave"], &done["waves"]), (&json!(3), &json!(3)));
    assert_eq!(
        done["progress"],
        json!({"waiting": 0, "upgrading": 0, "upgraded": 4, "failed": 1, "skipped": 0,
            "total": 5, "percent": 100})
    );
    assert_eq!(member(&done, "a3")["state"], "failed");
    let page = w.app.server_fn(&w.tim, "rollout", &[("id", &id)]).await;
    assert_eq!(page, done, "the portal's page sends what the API does");
    let a0 = wait_for_state(&w.app, &w.tim, &w.ids["a0"], "ready").await;
    assert_eq!(a0["parameters"]["kubernetes_version"], "1.21", "{a0}");
    let (status, body) = w.post(&w.tim, &path, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // The list: tim's and the operator's; bob's tenant has none.
    let (status, list) = w.get(&w.tim, "/api/v1/rollouts").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list[0]["id"], id.as_str(), "{list}");
    assert_eq!(list[0]["state"], "completed", "{list}");
    assert!(list[0].get("clusters").is_none(), "{list}");
    let (_, all) = w.get(&w.olga, "/api/v1/rollouts").await;
    assert_eq!(all, list);
    let (status, none) = w.get(&w.bob, "/api/v1/rollouts").await;
    assert_eq!((status, none), (StatusCode::OK, json!([])));

    // Each upgrade is on its cluster's timeline, naming the rollout and the wave.
    let short = &id[..8];
    for (name, wave) in [("a1", 1), ("a4", 2), ("a3", 2), ("a0", 3)] {
        let said =
            format!("Upgrade to 1.21 requested by rollout {short} of tim (wave {wave} of 3)");
        let timeline = w.timeline(name).await;
        assert!(
            timeline.contains(&said),
            "{said:?} in {name}: {timeline:#?}"
        );
    }
    assert!(
        !w.timeline("b1")
            .await
            .iter()
            .any(|m| m.starts_with("Upgrade")),
        "b1 was not in the rollout"
    );
    // Audited: the start and the resume by tim, the pause at the failure and the end by the
    // system, each upgrade by the system naming the rollout.
    let events = w
        .app
        .audit(AuditQuery {
            action: Some("rollout.".into()),
            ..Default::default()
        })
        .await;
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .filter(|e| e.target == id)
        .map(|e| (e.action.as_str(), e.actor.as_str(), e.outcome.as_str()))
        .collect();
    for want in [
        ("rollout.start", "tim", "success"),
        ("rollout.pause", "system", "success"),
        ("rollout.resume", "tim", "success"),
        ("rollout.complete", "system", "success"),
    ] {
        assert!(seen.contains(&want), "{want:?} in {seen:#?}");
    }
    let start = events
        .iter()
        .find(|e| e.action == "rollout.start" && e.target == id)
        .unwrap();
    assert_eq!(
        start.detail.as_deref(),
        Some("upgrade to 1.21: 5 cluster(s) in 3 wave(s) of 2")
    );
    let complete = events
        .iter()
        .find(|e| e.action == "rollout.complete")
        .unwrap();
    assert_eq!(complete.detail.as_deref(), Some("4 upgraded, 1 failed"));
    let upgrades = w
        .app
        .audit(AuditQuery {
            action: Some("cluster.upgrade".into()),
            ..Default::default()
        })
        .await;
    let a1 = upgrades.iter().find(|e| e.target == "a1").unwrap();
    assert_eq!(a1.actor, "system");
    assert!(
        a1.detail
            .as_deref()
            .unwrap_or_default()
            .contains(&format!("rollout {id} of tim, wave 1 of 3")),
        "{a1:?}"
    );
    w.app.stop().await;
}

#[tokio::test]
async fn who_may_what_is_refused_and_an_abort_skips_the_waiting() {
    let w = lab().await;
    let plan = "/api/v1/rollouts/plan";
    let team_a = json!({"tenant": "team-a", "provider": "lab", "version": "1.20",
        "target_version": "1.21", "wave_size": 1});

    // Nobody: 401 everywhere.
    for (method, path) in [
        (Method::POST, plan),
        (Method::POST, "/api/v1/rollouts"),
        (Method::GET, "/api/v1/rollouts"),
    ] {
        let body = (method == Method::POST).then(|| team_a.clone());
        let (status, answer) = call(&w.app.client, &w.app, method.clone(), path, body).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {answer}"
        );
    }
    // Members may not; a tenant admin may not roll out across the fleet, nor in another
    // tenant (which answers as if it did not exist).
    for path in [plan, "/api/v1/rollouts"] {
        let (status, body) = w.post(&w.amy, path, team_a.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        let fleet = json!({"target_version": "1.21", "wave_size": 1});
        let (status, body) = w.post(&w.tim, path, fleet).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        let (status, body) = w.post(&w.bob, path, team_a.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(message(status, &body), "tenant not found");
    }
    let (status, body) = w.get(&w.amy, "/api/v1/rollouts").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Every input is checked, the message naming the field.
    let with = |field: &str, value: Value| {
        let mut body = team_a.clone();
        body[field] = value;
        body
    };
    let version = "must look like 1.34 or v1.34.2";
    for (body, want) in [
        (
            with("target_version", json!("latest")),
            format!("target_version: {version}"),
        ),
        (
            with("target_version", json!("")),
            format!("target_version: {version}"),
        ),
        (
            with("target_version", json!(" 1.21")),
            "target_version: must not start or end with a space".to_owned(),
        ),
        (
            with("wave_size", json!(0)),
            "wave_size: must be between 1 and 100".to_owned(),
        ),
        (
            with("wave_size", json!(101)),
            "wave_size: must be between 1 and 100".to_owned(),
        ),
        (with("version", json!("x")), format!("version: {version}")),
        (
            with("provider", json!("nope")),
            "provider: there is no provider named nope".to_owned(),
        ),
    ] {
        for path in [plan, "/api/v1/rollouts"] {
            let (status, answer) = w.post(&w.tim, path, body.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {answer}");
            assert_eq!(message(status, &answer), want, "{path} {body}");
        }
    }
    let (status, answer) = w.post(&w.tim, plan, with("wave_size", json!(-1))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        message(status, &answer).starts_with("wave_size: "),
        "{answer}"
    );

    // Nothing to upgrade: 409 saying why.
    for (body, want) in [
        (
            with("target_version", json!("1.20")),
            "no cluster would be upgraded to 1.20: 5 cluster(s) match but are left out (a0: \
             it runs 1.20 already; …)",
        ),
        (
            with("provider", json!("frozen")),
            "no cluster would be upgraded to 1.21: 1 cluster(s) match but are left out (f1: \
             its provider (command) cannot upgrade clusters)",
        ),
    ] {
        let (status, answer) = w.post(&w.tim, "/api/v1/rollouts", body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
        assert_eq!(message(status, &answer), want);
    }

    // One at a time, held: a1 upgrades, the rest wait.
    w.gate();
    let (status, started) = w.post(&w.tim, "/api/v1/rollouts", team_a.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (&started["wave"], &started["waves"]),
        (&json!(1), &json!(5))
    );
    w.logged("start a1 1.21").await;
    // Its clusters are in an open rollout: another over them is refused, and the operator's
    // plan leaves them out, saying which rollout holds them.
    let (status, answer) = w.post(&w.tim, "/api/v1/rollouts", team_a.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(
        message(status, &answer),
        format!(
            "no cluster would be upgraded to 1.21: 5 cluster(s) match but are left out (a0: \
             it is in rollout {id}, which has not ended; …)"
        )
    );
    let fleet = json!({"version": "1.20", "target_version": "1.21", "wave_size": 10});
    let (status, fleet_plan) = w.post(&w.olga, plan, fleet).await;
    assert_eq!(status, StatusCode::OK, "{fleet_plan}");
    assert_eq!(waves(&fleet_plan), [vec!["b1"]]);
    let held = format!("it is in rollout {id}, which has not ended");
    let left = excluded(&fleet_plan);
    for name in ["a0", "a1", "a2", "a3", "a4"] {
        assert!(left.contains(&(name, held.as_str())), "{name}: {left:?}");
    }

    // Who sees it: its tenant's admin and operators; its tenant's member is refused, another
    // tenant's admin finds nothing.
    let rollout = format!("/api/v1/rollouts/{id}");
    for who in [&w.tim, &w.olga] {
        let (status, body) = w.get(who, &rollout).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = w.get(&w.amy, &rollout).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = w.get(&w.bob, &rollout).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = w.get(&w.tim, "/api/v1/rollouts/not-a-uuid").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = w.get(&w.app.client, &rollout).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    for verb in ["pause", "resume", "abort"] {
        let path = format!("{rollout}/{verb}");
        let (status, body) = w.post(&w.amy, &path, json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{verb}: {body}");
        let (status, body) = w.post(&w.bob, &path, json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{verb}: {body}");
    }
    let (status, body) = w.get(&w.bob, "/api/v1/rollouts").await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));

    // A running rollout cannot be resumed; paused, it cannot be paused again.
    let (status, body) = w
        .post(&w.tim, &format!("{rollout}/resume"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, paused) = w.post(&w.tim, &format!("{rollout}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(
        (&paused["state"], &paused["reason"]),
        (&json!("paused"), &json!("paused by tim"))
    );
    let (status, body) = w.post(&w.tim, &format!("{rollout}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        message(status, &body),
        "the rollout is paused: it cannot be paused"
    );

    // Aborted by the operator: the waiting clusters are skipped, a1's upgrade finishes.
    let (status, aborted) = w
        .post(&w.olga, &format!("{rollout}/abort"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{aborted}");
    assert_eq!(
        (&aborted["state"], &aborted["reason"]),
        (&json!("aborted"), &json!("aborted by olga"))
    );
    for name in ["a2", "a3", "a4", "a0"] {
        let m = member(&aborted, name);
        assert_eq!(
            (&m["state"], &m["reason"]),
            (&json!("skipped"), &json!("the rollout was aborted")),
            "{name}"
        );
    }
    assert_eq!(member(&aborted, "a1")["state"], "upgrading");
    for verb in ["abort", "pause", "resume"] {
        let (status, body) = w
            .post(&w.tim, &format!("{rollout}/{verb}"), json!({}))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{verb}: {body}");
    }
    w.release();
    let ended = w
        .until(&id, "a1 upgraded", |r| {
            member(r, "a1")["state"] == "upgraded"
        })
        .await;
    assert_eq!(ended["state"], "aborted", "{ended:#}");
    assert_eq!(
        ended["progress"],
        json!({"waiting": 0, "upgrading": 0, "upgraded": 1, "failed": 0, "skipped": 4,
            "total": 5, "percent": 100})
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(w.log(), ["start a1 1.21", "end a1"]);
    // Ended, it holds its clusters no longer.
    let (status, again) = w.post(&w.tim, plan, team_a).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        waves(&again),
        [vec!["a2"], vec!["a3"], vec!["a4"], vec!["a0"]]
    );

    // Audited: the pause and abort; the refusals of the member, the other tenant's admin and
    // the tenant admin without a tenant; the invalid inputs.
    let events = w
        .app
        .audit(AuditQuery {
            action: Some("rollout.".into()),
            ..Default::default()
        })
        .await;
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.action.as_str(), e.actor.as_str(), e.outcome.as_str()))
        .collect();
    for want in [
        ("rollout.start", "tim", "success"),
        ("rollout.pause", "tim", "success"),
        ("rollout.abort", "olga", "success"),
        ("rollout.plan", "amy", "denied"),
        ("rollout.start", "amy", "denied"),
        ("rollout.view", "amy", "denied"),
        ("rollout.start", "bob", "denied"),
        ("rollout.abort", "bob", "denied"),
        ("rollout.plan", "tim", "denied"),
        ("rollout.start", "tim", "failure"),
    ] {
        assert!(seen.contains(&want), "{want:?} in {seen:#?}");
    }
    w.app.stop().await;
}

#[tokio::test]
async fn kqueen_rollouts_commands_and_their_exit_codes() {
    let w = lab().await;
    let (tims, amys) = (Laptop::new(), Laptop::new());
    tims.login(&w.app, &w.tim).await;
    amys.login(&w.app, &w.amy).await;
    let filter = [
        "--target",
        "1.21",
        "--tenant",
        "team-a",
        "--version",
        "1.20",
        "--wave-size",
        "2",
    ];
    let args = |cmd: &'static str, more: &[&'static str]| {
        let mut all = vec!["rollouts", cmd];
        all.extend_from_slice(&filter);
        all.extend_from_slice(more);
        all
    };

    // plan: a table of the waves and what is left out; the API's answer as JSON or YAML.
    let ran = tims.kqueen(&args("plan", &[])).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let lines: Vec<Vec<&str>> = ran
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "WAVE",
            "TENANT",
            "CLUSTER",
            "PROVIDER",
            "VERSION",
            "PRODUCTION"
        ],
        "{ran:?}"
    );
    assert_eq!(
        lines[1],
        ["1", "of", "3", "team-a", "a1", "lab", "1.20", "no"],
        "{ran:?}"
    );
    assert_eq!(
        lines[5],
        ["3", "of", "3", "team-a", "a0", "lab", "1.20", "yes"],
        "{ran:?}"
    );
    for said in [
        "left out (1):",
        "its provider (command) cannot upgrade clusters",
        "5 cluster(s) in 3 wave(s); 1 left out",
    ] {
        assert!(ran.stdout.contains(said), "{said:?} in {ran:?}");
    }
    let ran = tims.kqueen(&args("plan", &["-o", "json"])).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let plan: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        waves(&plan),
        [vec!["a1", "a2"], vec!["a3", "a4"], vec!["a0"]]
    );
    let ran = tims.kqueen(&args("plan", &["-o", "yaml"])).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("excluded:"), "{ran:?}");
    // Refusals keep their exit codes: 4 forbidden, 5 not found, 6 invalid or conflicting,
    // 2 usage, 3 not logged in.
    let ran = amys.kqueen(&args("plan", &[])).await;
    assert_eq!(ran.code, 4, "{ran:?}");
    let ran = tims.kqueen(&["rollouts", "plan", "--target", "1.21"]).await;
    assert_eq!(ran.code, 4, "{ran:?}");
    let ran = tims
        .kqueen(&["rollouts", "plan", "--target", "1.21", "--tenant", "team-b"])
        .await;
    assert_eq!(ran.code, 5, "{ran:?}");
    let ran = tims
        .kqueen(&[
            "rollouts", "plan", "--target", "latest", "--tenant", "team-a",
        ])
        .await;
    assert_eq!(ran.code, 6, "{ran:?}");
    assert!(
        ran.stderr
            .contains("target_version: must look like 1.34 or v1.34.2"),
        "{ran:?}"
    );
    let ran = tims
        .kqueen(&["rollouts", "plan", "--target", "1.21", "--wave-size", "0"])
        .await;
    assert_eq!(ran.code, 2, "{ran:?}");
    let ran = Laptop::new().kqueen(&["rollouts", "list"]).await;
    assert_eq!(ran.code, 3, "{ran:?}");

    // start: held, wave 1 upgrades; the answer is the rollout.
    w.gate();
    let ran = tims.kqueen(&args("start", &["-o", "json"])).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let started: Value = serde_json::from_str(&ran.stdout).unwrap();
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(members(&started)["a1"], (1, "upgrading"), "{started:#}");
    let ran = tims.kqueen(&args("start", &[])).await;
    assert_eq!(ran.code, 6, "{ran:?}");
    assert!(ran.stderr.contains("which has not ended"), "{ran:?}");
    let ran = amys.kqueen(&args("start", &[])).await;
    assert_eq!(ran.code, 4, "{ran:?}");

    // list and get (by the start of its id, as timelines show it).
    let ran = tims.kqueen(&["rollouts", "list"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let row: Vec<&str> = ran
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..9],
        [
            id.as_str(),
            "team-a",
            "1.21",
            "running",
            "1",
            "of",
            "3",
            "(waves",
            "of"
        ],
        "{ran:?}"
    );
    let ran = tims.kqueen(&["rollouts", "list", "-o", "json"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let list: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(list[0]["id"], id.as_str(), "{ran:?}");
    assert_eq!(amys.kqueen(&["rollouts", "list"]).await.code, 4);
    let ran = tims.kqueen(&["rollouts", "get", &id[..8]]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    for said in [
        "state       running",
        "clusters    tenant team-a, version 1.20",
        "wave        1 of 3 (waves of 2)",
        "progress    0% (2 upgrading, 3 waiting)",
    ] {
        assert!(ran.stdout.contains(said), "{said:?} in {ran:?}");
    }
    let a3: Vec<&str> = ran
        .stdout
        .lines()
        .find(|l| l.contains(" a3 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        a3,
        ["2", "team-a", "a3", "1.20", "waiting", "-", "-"],
        "{ran:?}"
    );
    let ran = tims.kqueen(&["rollouts", "get", &id, "-o", "yaml"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("clusters:"), "{ran:?}");
    let nobody = "00000000-0000-0000-0000-000000000000";
    assert_eq!(tims.kqueen(&["rollouts", "get", nobody]).await.code, 5);
    assert_eq!(tims.kqueen(&["rollouts", "get", "fffff"]).await.code, 5);
    assert_eq!(amys.kqueen(&["rollouts", "get", &id]).await.code, 4);

    // pause, resume, abort: a line for people, the rollout as JSON or YAML.
    let ran = tims.kqueen(&["rollouts", "resume", &id]).await;
    assert_eq!(ran.code, 6, "{ran:?}");
    assert!(ran.stderr.contains("cannot be resumed"), "{ran:?}");
    let ran = tims.kqueen(&["rollouts", "pause", &id[..8]]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(
        ran.stdout.trim(),
        format!("rollout {id} (upgrade to 1.21): paused, wave 1 of 3, 0% done (paused by tim)")
    );
    let ran = tims
        .kqueen(&["rollouts", "resume", &id, "-o", "json"])
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let resumed: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(resumed["state"], "running", "{ran:?}");
    let ran = amys.kqueen(&["rollouts", "abort", &id]).await;
    assert_eq!(ran.code, 4, "{ran:?}");
    let ran = tims.kqueen(&["rollouts", "abort", &id, "-o", "yaml"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("state: aborted"), "{ran:?}");
    let ran = tims.kqueen(&["rollouts", "abort", &id]).await;
    assert_eq!(ran.code, 6, "{ran:?}");
    w.release();
    w.until(&id, "wave 1 ended", |r| !upgrading(r)).await;
    w.app.stop().await;
}
