//! Upgrades in waves over real hosted control planes: six hosted clusters of one tenant
//! (real kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2 on a shared TLS
//! etcd), upgraded to "1.21" (a copy of the same binaries: one version is available here)
//! two at a time by the running engine. One cluster's provider lost its 1.21 API server
//! binary (removed after the provider was defined), so its upgrade fails in wave 2: the
//! rollout pauses with that reason, wave 3 waits; a resume goes on and completes, the failed
//! cluster left failed. At every observation no cluster of a later wave has started while
//! one of an earlier wave is still under way. Who may: the tenant admin; not a member of the
//! tenant, not another tenant's admin.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::{Duration, Instant};

use kqueen_core::audit::AuditQuery;
use kqueen_core::cluster::ClusterState;
use kqueen_core::page::Page;
use kqueen_core::rollout::{MemberState, RolloutState};
use kqueen_core::{Error, RolloutInput, RolloutView};
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::process::KillOnDrop;
use kqueen_testkit::tls_etcd::TlsEtcd;

const APISERVER: &str = "KQUEEN_TEST_KUBE_APISERVER";
const CONTROLLER_MANAGER: &str = "KQUEEN_TEST_KUBE_CONTROLLER_MANAGER";

/// Copies of the control plane's binaries in `dir` (the "1.21" of a provider).
fn copies(dir: &std::path::Path, apiserver: &str, cm: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(apiserver, dir.join("kube-apiserver")).unwrap();
    std::fs::copy(cm, dir.join("kube-controller-manager")).unwrap();
    let scheduler = std::path::Path::new(cm).with_file_name("kube-scheduler");
    std::fs::copy(&scheduler, dir.join("kube-scheduler")).unwrap();
    format!(
        "1.20 {apiserver} {cm}\n1.21 {} {}\n",
        dir.join("kube-apiserver").display(),
        dir.join("kube-controller-manager").display()
    )
}

/// Checks that no cluster of a later wave has left waiting while one of an earlier wave is
/// waiting or upgrading.
fn waves_in_order(view: &RolloutView) {
    for m in &view.members {
        if m.state == MemberState::Waiting {
            continue;
        }
        let earlier_open = view.members.iter().find(|e| {
            e.wave < m.wave && matches!(e.state, MemberState::Waiting | MemberState::Upgrading)
        });
        assert!(
            earlier_open.is_none(),
            "{} (wave {}) is {} while {:?} of an earlier wave is not done",
            m.cluster_name,
            m.wave + 1,
            m.state,
            earlier_open.map(|e| (&e.cluster_name, e.state))
        );
    }
}

fn member<'a>(view: &'a RolloutView, name: &str) -> &'a kqueen_core::rollout::RolloutMember {
    view.members
        .iter()
        .find(|m| m.cluster_name == name)
        .unwrap_or_else(|| panic!("{name} is not in the rollout"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_hosted_clusters_upgrade_in_waves_of_two_pause_at_a_failure_and_resume() {
    let (Ok(apiserver), Ok(cm)) = (std::env::var(APISERVER), std::env::var(CONTROLLER_MANAGER))
    else {
        println!("skipped: {APISERVER} and {CONTROLLER_MANAGER} name the real binaries");
        return;
    };
    let started = Instant::now();
    let etcd = TlsEtcd::start().await;
    let h = HostedKqueen::start(
        etcd,
        "team-a=team-a:admin,team-a-dev=team-a:member,team-b=team-b:admin",
    )
    .await;
    let k = &h.k;
    let alice = h.person("alice", "team-a").await;
    let dora = h.person("dora", "team-a-dev").await;
    let bob = h.person("bob", "team-b").await;

    let good = copies(&h.work.path().join("v121"), &apiserver, &cm);
    let flaky_dir = h.work.path().join("v121-flaky");
    let flaky = copies(&flaky_dir, &apiserver, &cm);
    h.offer("shared", &[("versions", &good)], ("hosted-small", ""))
        .await;
    h.offer("shared-b", &[("versions", &flaky)], ("hosted-other", ""))
        .await;
    // The second provider's host loses its 1.21 API server after the provider was defined.
    std::fs::remove_file(flaky_dir.join("kube-apiserver")).unwrap();

    let names = ["w1-a", "w1-b", "w2-a", "w2-flaky", "w3-a", "w3-b"];
    let mut ids = Vec::new();
    let mut guards: Vec<KillOnDrop> = Vec::new();
    for name in names {
        let template = if name == "w2-flaky" {
            "hosted-other"
        } else {
            "hosted-small"
        };
        let id = h
            .request(&alice, ("team-a", name, template), Some("1.20"))
            .await;
        guards.push(h.processes_of(&id));
        ids.push(id);
    }

    // The engine runs as in production: operations in parallel, rollouts on their turn.
    let mut config = h.engine_config();
    config.rollout_interval = Duration::from_millis(300);
    config.max_attempts = 2;
    let engine = k.engine(config);
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(engine.run(shutdown));
    let ready_by = Instant::now() + Duration::from_secs(300);
    loop {
        let mut states = Vec::new();
        for id in &ids {
            states.push(
                k.clusters()
                    .cluster_detail(&h.ops, id)
                    .await
                    .unwrap()
                    .cluster
                    .state,
            );
        }
        assert!(
            !states.contains(&ClusterState::Error),
            "a cluster failed: {states:?}"
        );
        if states.iter().all(|s| *s == ClusterState::Ready) {
            break;
        }
        assert!(Instant::now() < ready_by, "not all Ready: {states:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("six clusters Ready after {:?}", started.elapsed());

    // The plan: three waves of two, in name order; nothing left out.
    let input = RolloutInput {
        tenant: Some("team-a".into()),
        version: Some("1.20".into()),
        target_version: "1.21".into(),
        wave_size: 2,
        ..RolloutInput::default()
    };
    let plan = k.rollouts().plan(&alice, &input).await.unwrap();
    let waves: Vec<Vec<&str>> = plan
        .waves
        .iter()
        .map(|w| w.iter().map(|c| c.name.as_str()).collect())
        .collect();
    assert_eq!(
        waves,
        vec![["w1-a", "w1-b"], ["w2-a", "w2-flaky"], ["w3-a", "w3-b"]]
    );
    assert!(plan.excluded.is_empty(), "{:?}", plan.excluded);

    // Not a member of the tenant, not another tenant's admin, not fleet-wide for alice.
    assert!(matches!(
        k.rollouts().start(&dora, &input).await,
        Err(Error::Forbidden)
    ));
    assert!(matches!(
        k.rollouts().plan(&bob, &input).await,
        Err(Error::NotFound(_))
    ));
    let fleet_wide = RolloutInput {
        tenant: None,
        ..input.clone()
    };
    assert!(matches!(
        k.rollouts().start(&alice, &fleet_wide).await,
        Err(Error::Forbidden)
    ));

    // Started: the first wave at once.
    let view = k.rollouts().start(&alice, &input).await.unwrap();
    let id = view.rollout.id.to_string();
    assert_eq!((view.rollout.waves, view.rollout.wave), (3, 0));
    assert_eq!(member(&view, "w1-a").state, MemberState::Upgrading);
    assert_eq!(member(&view, "w2-a").state, MemberState::Waiting);
    assert!(matches!(
        k.rollouts().get(&bob, &id).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        k.rollouts().get(&dora, &id).await,
        Err(Error::Forbidden)
    ));
    // A second rollout cannot take the same clusters while this one runs.
    assert!(matches!(
        k.rollouts().start(&alice, &input).await,
        Err(Error::Conflict(_))
    ));

    // Wave 2 fails on w2-flaky: paused with its reason, w3 waits; w2-a finishes.
    let paused = follow(k, &alice, &id, |v| {
        v.rollout.state == RolloutState::Paused && member(v, "w2-a").state == MemberState::Upgraded
    })
    .await;
    let reason = paused.rollout.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("wave 2 of 3: w2-flaky: "),
        "paused because: {reason}"
    );
    assert_eq!(member(&paused, "w2-flaky").state, MemberState::Failed);
    assert_eq!(member(&paused, "w3-a").state, MemberState::Waiting);
    assert_eq!(member(&paused, "w3-b").state, MemberState::Waiting);
    for name in ["w1-a", "w1-b", "w2-a"] {
        assert_eq!(member(&paused, name).state, MemberState::Upgraded, "{name}");
    }
    // Paused stays paused: the next turns start nothing.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let still = k.rollouts().get(&alice, &id).await.unwrap();
    assert_eq!(still.rollout.state, RolloutState::Paused);
    assert_eq!(member(&still, "w3-a").state, MemberState::Waiting);

    // Resumed: the failed cluster (in Error) stays failed; wave 3 runs; completed.
    let resumed = k.rollouts().resume(&alice, &id).await.unwrap();
    assert_eq!(resumed.rollout.state, RolloutState::Running);
    let done = follow(k, &alice, &id, |v| {
        v.rollout.state == RolloutState::Completed
    })
    .await;
    assert_eq!(done.rollout.reason.as_deref(), Some("5 upgraded, 1 failed"));
    assert_eq!(member(&done, "w2-flaky").state, MemberState::Failed);

    // The upgraded clusters run "1.21" and answer; the timeline names the rollout's wave.
    let w3 = &ids[4];
    let detail = k.clusters().cluster_detail(&alice, w3).await.unwrap();
    assert_eq!(detail.cluster.state, ClusterState::Ready);
    assert_eq!(
        detail
            .cluster
            .parameters
            .get("kubernetes_version")
            .map(String::as_str),
        Some("1.21")
    );
    let short: String = id.chars().take(8).collect();
    assert!(
        detail.events.iter().any(|e| e.message
            == format!("Upgrade to 1.21 requested by rollout {short} of alice (wave 3 of 3)")),
        "{:#?}",
        detail.events
    );
    let client = support::kube_client::client_of(
        h.admin_kubeconfig(w3).await.as_bytes(),
        Duration::from_secs(5),
    )
    .await;
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
        .list(&Default::default())
        .await
        .unwrap();

    // The audit trail: started and resumed by alice, paused and completed by the system.
    let events = k
        .audit()
        .audit_events(
            &h.ops,
            &AuditQuery {
                action: Some("rollout.".into()),
                ..AuditQuery::default()
            },
            Page::first(50),
        )
        .await
        .unwrap();
    let mut seen: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.outcome.as_str() == "success")
        .map(|e| (e.action.clone(), e.actor.clone()))
        .collect();
    seen.sort();
    for want in [
        ("rollout.complete", "system"),
        ("rollout.pause", "system"),
        ("rollout.resume", "alice"),
        ("rollout.start", "alice"),
    ] {
        assert!(
            seen.iter()
                .any(|(a, who)| a == want.0 && who.contains(want.1)),
            "{want:?} not in {seen:?}"
        );
    }

    stop.send(true).unwrap();
    running.await.unwrap();
    println!("done after {:?}", started.elapsed());
}

/// Follows the rollout until `done` holds, checking at every look that waves run in order.
async fn follow(
    k: &kqueen_core::Kqueen,
    who: &kqueen_core::Actor,
    id: &str,
    done: impl Fn(&RolloutView) -> bool,
) -> RolloutView {
    let by = Instant::now() + Duration::from_secs(300);
    loop {
        let view = k.rollouts().get(who, id).await.unwrap();
        waves_in_order(&view);
        if done(&view) {
            return view;
        }
        assert!(
            Instant::now() < by,
            "rollout still {} ({:?}): {:#?}",
            view.rollout.state,
            view.rollout.reason,
            view.members
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
