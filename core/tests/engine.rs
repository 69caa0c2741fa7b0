//! The cluster use cases and the operation engine, with a provisioner written for tests:
//! requests return at once, a killed worker's operation is resumed by another, leases expire
//! and fence the old owner, two workers on one database never run an operation twice,
//! timeouts put the cluster in Error, quotas refuse, time-to-live deletes.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use kqueen_core::audit::AuditQuery;
use kqueen_core::cluster::{
    ClusterFilter, ClusterRequest, ClusterState, EventKind, OperationKind, OperationState,
    OperationTarget, Quota, TemplateInput,
};
use kqueen_core::engine::{Engine, EngineConfig};
use kqueen_core::identity::GroupMap;
use kqueen_core::page::Page;
use kqueen_core::provisioner::{
    Capabilities, OpContext, ParamKind, ParamSchema, ParamSpec, ProviderKind, ProvisionError,
    Provisioned, Provisioner, Registry, Step,
};
use kqueen_core::vault::Secret;
use kqueen_core::{Actor, Error, ExternalLogin, Kqueen};
use kqueen_testkit::TestDatabase;
use serde_json::json;

/// Behaviour by cluster name prefix: `ok-` (two calls), `fail-`, `slow-` (never ends),
/// `flaky-` (one transient error), `hang-` (second call blocks while `hang` is set), `mute-`
/// (blocks at once), `live-` (reports a step and 10 %, then blocks).
#[derive(Default)]
struct Scripted {
    creates: Mutex<BTreeMap<String, u32>>,
    deletes: Mutex<BTreeMap<String, u32>>,
    /// What each delete was handed of an unfinished create's checkpoint.
    delete_saw: Mutex<BTreeMap<String, serde_json::Value>>,
    hang: AtomicBool,
}

#[async_trait]
impl Provisioner for Scripted {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            scale: true,
            upgrade: false,
            deletes_infrastructure: true,
            replace_node: false,
        }
    }
    fn provider_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![ParamSpec::new(
            "password",
            "Password",
            ParamKind::String {
                default: None,
                max_len: 50,
            },
        )
        .secret()])
    }
    fn cluster_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![ParamSpec::new(
            "node_count",
            "Nodes",
            ParamKind::Integer {
                default: Some(1),
                min: Some(1),
                max: Some(10),
            },
        )])
    }
    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        *self
            .creates
            .lock()
            .unwrap()
            .entry(ctx.cluster_name.clone())
            .or_default() += 1;
        assert_eq!(
            ctx.secret("password").unwrap().expose(),
            b"s3cret",
            "provider secrets reach the provisioner"
        );
        let calls = ctx.checkpoint["calls"].as_u64().unwrap_or(0);
        ctx.checkpoint = json!({ "calls": calls + 1 });
        // Installer state in the cluster's working directory.
        std::fs::create_dir_all(&ctx.work_dir).unwrap();
        std::fs::write(ctx.work_dir.join("state"), "machines").unwrap();
        let name = ctx.cluster_name.clone();
        if name.starts_with("fail-") {
            return Err(ProvisionError::Failed("the installer said no".into()));
        }
        if name.starts_with("slow-") {
            std::future::pending::<()>().await;
        }
        if name.starts_with("flaky-") && calls == 0 {
            return Err(ProvisionError::Transient("network is down".into()));
        }
        if name.starts_with("hang-") && calls >= 1 && self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if name.starts_with("mute-") {
            std::future::pending::<()>().await;
        }
        if name.starts_with("live-") {
            ctx.reporter.step("Booting machines");
            ctx.reporter.progress(10);
            std::future::pending::<()>().await;
        }
        if calls == 0 {
            ctx.reporter.step("Building machines");
            ctx.reporter.progress(50);
            ctx.reporter.log("machine 1 up");
            return Ok(Step::Wait(Duration::from_millis(10)));
        }
        ctx.reporter.step("Installing Kubernetes");
        Ok(Step::Done(()))
    }
    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let user = if ctx.cluster_name.starts_with("ok-exec") {
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/touch\n      args: [/tmp/pwned]\n"
        } else {
            "    token: t0ken\n"
        };
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{}.test:6443\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n{user}",
            ctx.cluster_name
        );
        Ok(Provisioned {
            kubeconfig: Secret::new(yaml),
            endpoint: None,
            state: json!({"built": ctx.cluster_name}),
        })
    }
    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        if ctx.create_checkpoint.is_null() {
            assert_eq!(ctx.cluster_state["built"], ctx.cluster_name.as_str());
        }
        self.delete_saw
            .lock()
            .unwrap()
            .insert(ctx.cluster_name.clone(), ctx.create_checkpoint.clone());
        *self
            .deletes
            .lock()
            .unwrap()
            .entry(ctx.cluster_name.clone())
            .or_default() += 1;
        Ok(Step::Done(()))
    }
    async fn scale(&self, _ctx: &mut OpContext, _nodes: u32) -> Result<Step<()>, ProvisionError> {
        Ok(Step::Done(()))
    }
}

struct Setup {
    k: Kqueen,
    scripted: Arc<Scripted>,
    alice: Actor,
    bob: Actor,
    work: tempfile::TempDir,
    _db: Arc<TestDatabase>,
}

async fn setup(db: TestDatabase) -> Setup {
    let db = Arc::new(db);
    let scripted = Arc::new(Scripted::default());
    let mut registry = Registry::new();
    registry.register(scripted.clone());
    let k = Kqueen::new(Arc::new(db.connect().await))
        .with_registry(registry)
        .with_group_map(GroupMap::parse("team-a=team-a:member,team-b=team-b:member").unwrap());
    let login = |sub: &str, group: &str| ExternalLogin {
        issuer: "http://idp.test".into(),
        subject: sub.into(),
        preferred_username: Some(sub.into()),
        email: None,
        name: None,
        groups: vec![group.into()],
    };
    let alice = Actor::user(
        k.auth()
            .login_external(&login("alice", "team-a"), None)
            .await
            .unwrap(),
    );
    let bob = Actor::user(
        k.auth()
            .login_external(&login("bob", "team-b"), None)
            .await
            .unwrap(),
    );
    let ops = Actor::cli(Some("ops".into()));
    kqueen_testkit::catalog::offer(
        &k,
        &ops,
        ("command", "lab", &[("password", "s3cret")]),
        ("small", r#"{"node_count": {"max": 3}}"#),
    )
    .await;
    Setup {
        k,
        scripted,
        alice,
        bob,
        work: tempfile::tempdir().unwrap(),
        _db: db,
    }
}

impl Setup {
    fn engine(&self, owner: &str, lease: Duration) -> Engine {
        let mut c = EngineConfig::new(self.work.path().to_owned());
        c.owner = owner.into();
        c.lease = lease;
        c.poll_interval = Duration::from_millis(20);
        self.k.engine(c)
    }

    async fn request(&self, name: &str) -> Result<kqueen_core::cluster::Cluster, Error> {
        self.request_nodes(name, "1").await
    }

    async fn request_nodes(
        &self,
        name: &str,
        nodes: &str,
    ) -> Result<kqueen_core::cluster::Cluster, Error> {
        self.k
            .clusters()
            .request_cluster(
                &self.alice,
                ClusterRequest {
                    tenant: Some("team-a".into()),
                    name: name.into(),
                    template: "small".into(),
                    parameters: [("node_count".to_owned(), nodes.to_owned())].into(),
                },
            )
            .await
            .map(|(c, _)| c)
    }

    async fn state(&self, id: uuid::Uuid) -> ClusterState {
        self.k
            .clusters()
            .cluster_detail(&self.alice, &id.to_string())
            .await
            .unwrap()
            .cluster
            .state
    }
}

async fn request_returns_at_once_and_the_engine_provisions(db: TestDatabase) {
    let s = setup(db).await;
    let c = s.request("ok-one").await.unwrap();
    assert_eq!(c.state, ClusterState::Provisioning);
    assert!(
        s.scripted.creates.lock().unwrap().is_empty(),
        "nothing runs inside the request"
    );

    assert_eq!(
        s.engine("w1", Duration::from_secs(30))
            .run_until_idle()
            .await
            .unwrap(),
        1
    );
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Ready);
    assert_eq!(
        d.cluster.endpoint.as_deref(),
        Some("https://ok-one.test:6443")
    );
    assert_eq!(d.operations[0].state, OperationState::Succeeded);
    assert_eq!(d.operations[0].progress, 100);
    let steps: Vec<_> = d
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Step)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "Building machines",
            "Installing Kubernetes",
            "Fetching the kubeconfig"
        ]
    );
    assert!(d.events.iter().any(|e| e.message == "machine 1 up"));
    assert!(d.events.last().unwrap().message.starts_with("Ready"));

    // Operators download the stored admin kubeconfig; members may not; the download is audited.
    let ops = Actor::cli(Some("ops".into()));
    let kc =
        s.k.access()
            .admin_kubeconfig(&ops, &c.id.to_string())
            .await
            .unwrap();
    assert!(String::from_utf8_lossy(kc.yaml.expose()).contains("ok-one.test"));
    assert!(matches!(
        s.k.access()
            .admin_kubeconfig(&s.alice, &c.id.to_string())
            .await,
        Err(Error::Forbidden)
    ));
    // Another tenant does not even see it.
    assert!(matches!(
        s.k.clusters()
            .cluster_detail(&s.bob, &c.id.to_string())
            .await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        s.k.clusters()
            .delete_cluster(&s.bob, &c.id.to_string())
            .await,
        Err(Error::NotFound(_))
    ));
    let (bobs, total) =
        s.k.clusters()
            .list_clusters(&s.bob, &ClusterFilter::default(), Page::default())
            .await
            .unwrap();
    assert!(bobs.is_empty() && total == 0);

    assert!(s.work.path().join(c.id.to_string()).join("state").exists());
    // Delete: the provisioner deletes, the cluster disappears, its name is free again.
    s.k.clusters()
        .delete_cluster(&s.alice, &c.id.to_string())
        .await
        .unwrap();
    assert_eq!(s.state(c.id).await, ClusterState::Deleting);
    s.engine("w1", Duration::from_secs(30))
        .run_until_idle()
        .await
        .unwrap();
    assert_eq!(s.scripted.deletes.lock().unwrap()["ok-one"], 1);
    assert!(
        !s.work.path().join(c.id.to_string()).exists(),
        "a deleted cluster's working directory is removed"
    );
    assert!(matches!(
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await,
        Err(Error::NotFound(_))
    ));
    assert!(s
        .k
        .access()
        .admin_kubeconfig(&ops, &c.id.to_string())
        .await
        .is_err());
    s.request("ok-one").await.unwrap();
}

async fn a_killed_worker_is_resumed_by_another_after_its_lease(db: TestDatabase) {
    let s = setup(db).await;
    s.scripted.hang.store(true, Ordering::SeqCst);
    let c = s.request("hang-one").await.unwrap();
    let a = s.engine("worker-a", Duration::from_millis(1500));
    let op = a.claim().await.unwrap().unwrap();
    let killed = tokio::spawn(async move { a.execute(op).await });
    // Wait until the first call's checkpoint is saved, then kill worker A mid-operation.
    for _ in 0..200 {
        let d =
            s.k.clusters()
                .cluster_detail(&s.alice, &c.id.to_string())
                .await
                .unwrap();
        if d.operations[0].checkpoint.pointer("/provisioner/calls") == Some(&json!(1)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    killed.abort();
    let _ = killed.await;
    s.scripted.hang.store(false, Ordering::SeqCst);

    let b = s.engine("worker-b", Duration::from_secs(30));
    assert!(
        b.claim().await.unwrap().is_none(),
        "A's lease is still valid"
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(b.run_until_idle().await.unwrap(), 1);
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Ready);
    assert_eq!(d.operations[0].attempts, 2);
    assert_eq!(
        d.operations[0].checkpoint.pointer("/provisioner/calls"),
        Some(&json!(2)),
        "resumed from the checkpoint"
    );
    assert!(d
        .events
        .iter()
        .any(|e| e.message.starts_with("Resumed by worker worker-b")));
}

async fn a_worker_that_lost_its_lease_cannot_write(db: TestDatabase) {
    let s = setup(db).await;
    let c = s.request("ok-fenced").await.unwrap();
    let a = s.engine("worker-a", Duration::from_millis(300));
    let op = a.claim().await.unwrap().unwrap();
    // A stalls (does not renew) past its lease; B takes the operation over and finishes it.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let b = s.engine("worker-b", Duration::from_secs(30));
    assert_eq!(b.run_until_idle().await.unwrap(), 1);
    assert_eq!(s.state(c.id).await, ClusterState::Ready);
    // A wakes up with its stale claim: every write is refused, nothing changes.
    a.execute(op).await;
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Ready);
    assert_eq!(d.operations[0].state, OperationState::Succeeded);
    assert_eq!(d.operations[0].lease_owner, None);
}

async fn a_stale_claim_of_the_same_process_cannot_write(db: TestDatabase) {
    let s = setup(db).await;
    let c = s.request("ok-same").await.unwrap();
    let a = s.engine("worker-a", Duration::from_millis(300));
    let stale = a.claim().await.unwrap().unwrap();
    // The task holding the first claim stalls past its lease; the same process claims again.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let fresh = a.claim().await.unwrap().expect("claimable again");
    assert_eq!(fresh.id, stale.id);
    assert_ne!(
        fresh.lease_owner, stale.lease_owner,
        "one lease token per claim"
    );
    // The stalled task wakes up first: none of its writes pass the fence.
    a.execute(stale).await;
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Provisioning);
    assert_eq!(d.operations[0].state, OperationState::Running);
    a.execute(fresh).await;
    assert_eq!(s.state(c.id).await, ClusterState::Ready);
}

async fn a_delete_cancels_an_unfinished_create(db: TestDatabase) {
    let s = setup(db).await;
    s.scripted.hang.store(true, Ordering::SeqCst);
    let c = s.request("hang-cancel").await.unwrap();
    // A lease long enough that the check below is never late, even on a busy machine.
    let a = s.engine("worker-a", Duration::from_secs(2));
    let op = a.claim().await.unwrap().unwrap();
    let create = tokio::spawn(async move { a.execute(op).await });
    for _ in 0..300 {
        let d =
            s.k.clusters()
                .cluster_detail(&s.alice, &c.id.to_string())
                .await
                .unwrap();
        if d.operations[0].checkpoint.pointer("/provisioner/calls") == Some(&json!(1)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The create hangs in its second call; the member deletes the cluster anyway.
    s.k.clusters()
        .delete_cluster(&s.alice, &c.id.to_string())
        .await
        .expect("a delete is accepted while the create runs");
    // No worker takes the delete while the create's worker may still be running: not before
    // the create's lease has run out.
    let b = s.engine("worker-b", Duration::from_secs(30));
    assert!(
        b.claim().await.unwrap().is_none(),
        "the delete waits for the cancelled create's lease"
    );
    // The create's worker notices at its next lease renewal and stops.
    tokio::time::timeout(Duration::from_secs(5), create)
        .await
        .expect("the cancelled create stops")
        .unwrap();
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Deleting);
    let create_op = d
        .operations
        .iter()
        .find(|o| o.kind == OperationKind::Create)
        .unwrap();
    assert_eq!(create_op.state, OperationState::Failed);
    assert!(create_op.error.as_deref().unwrap().contains("cancelled"));
    // Within the create's lease (2 s) the delete becomes runnable.
    let mut ran = 0;
    for _ in 0..250 {
        ran += b.run_until_idle().await.unwrap();
        if ran > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ran, 1, "the delete ran once the create's lease was over");
    assert!(
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .is_err(),
        "deleted"
    );
    assert_eq!(
        s.scripted.delete_saw.lock().unwrap()["hang-cancel"],
        json!({"calls": 1}),
        "the delete is handed what the create had started"
    );

    // A create that failed hands its checkpoint to the delete as well.
    let f = s.request("fail-late").await.unwrap();
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    assert_eq!(s.state(f.id).await, ClusterState::Error);
    s.k.clusters()
        .delete_cluster(&s.alice, &f.id.to_string())
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();
    assert_eq!(
        s.scripted.delete_saw.lock().unwrap()["fail-late"],
        json!({"calls": 1})
    );
}

async fn scaling_stays_within_the_template(db: TestDatabase) {
    let s = setup(db).await;
    let ops = Actor::cli(Some("ops".into()));
    s.k.catalog()
        .create_template(
            &ops,
            TemplateInput {
                name: "pinned".into(),
                provider: "lab".into(),
                overrides: r#"{"node_count": {"fixed": "2"}}"#.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let c = s.request("ok-scale").await.unwrap();
    let pinned =
        s.k.clusters()
            .request_cluster(
                &s.alice,
                ClusterRequest {
                    tenant: Some("team-a".into()),
                    name: "ok-pinned".into(),
                    template: "pinned".into(),
                    parameters: Default::default(),
                },
            )
            .await
            .unwrap()
            .0;
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    // The cluster page offers what the template allows.
    for (id, range) in [(c.id, Some((1, 3))), (pinned.id, None)] {
        let d =
            s.k.clusters()
                .cluster_detail(&s.alice, &id.to_string())
                .await
                .unwrap();
        assert_eq!(
            d.node_range, range,
            "the template's range; none when it fixes the count"
        );
    }
    let refused =
        s.k.clusters()
            .scale_cluster(&s.alice, &c.id.to_string(), 5)
            .await;
    assert!(
        matches!(&refused, Err(Error::Invalid(v)) if v.to_string().contains("node_count: must be at most 3")),
        "{refused:?}"
    );
    let refused =
        s.k.clusters()
            .scale_cluster(&s.alice, &pinned.id.to_string(), 3)
            .await;
    assert!(
        matches!(&refused, Err(Error::Invalid(v)) if v.message.contains("fixed at 2")),
        "{refused:?}"
    );
    assert_eq!(
        s.state(c.id).await,
        ClusterState::Ready,
        "refusals change nothing"
    );
    let op =
        s.k.clusters()
            .scale_cluster(&s.alice, &c.id.to_string(), 3)
            .await
            .unwrap();
    assert_eq!(op.target, Some(OperationTarget::Nodes(3)));
    // Providers that cannot upgrade refuse before anything else.
    assert!(matches!(
        s.k.clusters()
            .upgrade_cluster(&s.alice, &pinned.id.to_string(), "1.34")
            .await,
        Err(Error::Conflict(_))
    ));
}

/// A scale takes its share of the node quota when it is queued, not when it is done: two
/// scales (or a scale and a new cluster) cannot together exceed the quota.
async fn scale_targets_count_against_the_node_quota_until_done(db: TestDatabase) {
    let s = setup(db).await;
    let ops = Actor::cli(None);
    let q = Quota {
        max_clusters: None,
        max_nodes: Some(5),
        ..Quota::default()
    };
    s.k.tenancy().set_quota(&ops, "team-a", q).await.unwrap();
    let a = s.request("ok-a").await.unwrap();
    let b = s.request("ok-b").await.unwrap();
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    let used = || async {
        s.k.tenancy()
            .quota(&s.alice, "team-a")
            .await
            .unwrap()
            .1
            .nodes
    };
    assert_eq!(used().await, 2);

    s.k.clusters()
        .scale_cluster(&s.alice, &a.id.to_string(), 3)
        .await
        .unwrap();
    assert_eq!(used().await, 4, "the queued scale counts already");
    let refused =
        s.k.clusters()
            .scale_cluster(&s.alice, &b.id.to_string(), 3)
            .await;
    assert!(
        matches!(&refused, Err(Error::Conflict(m)) if m.contains("at most 5 nodes")),
        "{refused:?}"
    );
    let refused = s.request_nodes("ok-c", "2").await;
    assert!(
        matches!(&refused, Err(Error::Conflict(m)) if m.contains("at most 5 nodes")),
        "{refused:?}"
    );
    assert_eq!(
        s.state(b.id).await,
        ClusterState::Ready,
        "refusals change nothing"
    );
    s.k.clusters()
        .scale_cluster(&s.alice, &b.id.to_string(), 2)
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();
    assert_eq!(used().await, 5);
    // Down is allowed even when the quota was lowered below what the tenant uses.
    let lowered = Quota {
        max_nodes: Some(3),
        ..q
    };
    s.k.tenancy()
        .set_quota(&ops, "team-a", lowered)
        .await
        .unwrap();
    s.k.clusters()
        .scale_cluster(&s.alice, &a.id.to_string(), 2)
        .await
        .unwrap();
}

/// The node count the cluster's detail shows, and its state and error.
async fn scaled(s: &Setup, id: uuid::Uuid) -> (u32, ClusterState, Option<String>) {
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &id.to_string())
            .await
            .unwrap();
    (d.cluster.node_count, d.cluster.state, d.cluster.error)
}

async fn an_operation_whose_target_cannot_be_read_fails_saying_so(db: TestDatabase) {
    let s = setup(db).await;
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    let c = s.request("ok-a").await.unwrap();
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    s.k.clusters()
        .scale_cluster(&s.alice, &c.id.to_string(), 3)
        .await
        .unwrap();
    // Written by hand, or by a KQueen that stored something else: never "scale to 0".
    store.testing_set_target(c.id, "three").await.unwrap();
    let used = s.k.tenancy().quota(&s.alice, "team-a").await.unwrap().1;
    assert_eq!(used.nodes, 1, "an unreadable scale takes no quota");
    engine.run_until_idle().await.unwrap();
    let (nodes, state, error) = scaled(&s, c.id).await;
    assert_eq!((nodes, state), (1, ClusterState::Error));
    let error = error.unwrap();
    assert!(
        error.contains("the scale operation's target cannot be read") && error.contains("three"),
        "{error}"
    );
    let detail =
        s.k.clusters()
            .cluster_detail(&s.alice, &c.id.to_string())
            .await
            .unwrap();
    let op = detail
        .operations
        .iter()
        .find(|o| o.kind == OperationKind::Scale)
        .unwrap();
    assert_eq!(op.state, OperationState::Failed);
}

/// A day-2 request reads the cluster's template once; a template that is gone means the
/// provisioner's schema and defaults, but one the store cannot read is the request's error:
/// nothing is queued, nothing defaults to a 60-minute timeout or any schema.
async fn day2_requests_fail_on_a_template_the_store_cannot_read(db: TestDatabase) {
    let s = setup(db).await;
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    let c = s.request("ok-a").await.unwrap();
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    store
        .testing_set_admin_access("small", "everything")
        .await
        .unwrap();
    let id = c.id.to_string();
    let scale = s.k.clusters().scale_cluster(&s.alice, &id, 2).await;
    assert!(matches!(&scale, Err(Error::Corrupt(_))), "{scale:?}");
    let delete = s.k.clusters().delete_cluster(&s.alice, &id).await;
    assert!(matches!(&delete, Err(Error::Corrupt(_))), "{delete:?}");
    let detail = s.k.clusters().cluster_detail(&s.alice, &id).await;
    assert!(matches!(&detail, Err(Error::Corrupt(_))), "{detail:?}");
    // Readable again: nothing was queued by the refusals.
    store
        .testing_set_admin_access("small", "namespaced")
        .await
        .unwrap();
    let d = s.k.clusters().cluster_detail(&s.alice, &id).await.unwrap();
    assert_eq!(d.cluster.state, ClusterState::Ready);
    assert_eq!(d.operations.len(), 1, "{:?}", d.operations);
    assert_eq!(d.node_range, Some((1, 3)), "the template's range");
}

async fn an_operation_whose_checkpoint_cannot_be_read_fails_saying_so(db: TestDatabase) {
    let s = setup(db).await;
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    let c = s.request("ok-a").await.unwrap();
    // A phase this KQueen does not know: never "start the create over".
    store
        .testing_set_checkpoint(
            c.id,
            r#"{"engine": {"phase": "deploy"}, "provisioner": null}"#,
        )
        .await
        .unwrap();
    s.engine("w", Duration::from_secs(30))
        .run_until_idle()
        .await
        .unwrap();
    let (_, state, error) = scaled(&s, c.id).await;
    assert_eq!(state, ClusterState::Error);
    let error = error.unwrap();
    assert!(
        error.contains("the operation's checkpoint cannot be read") && error.contains("deploy"),
        "{error}"
    );
    assert_eq!(
        s.scripted.creates.lock().unwrap().get("ok-a"),
        None,
        "the provisioner was never called"
    );
}

async fn targets_stored_before_they_were_typed_are_migrated(db: TestDatabase) {
    let s = setup(db).await;
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    let c = s.request("ok-a").await.unwrap();
    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    s.k.clusters()
        .scale_cluster(&s.alice, &c.id.to_string(), 3)
        .await
        .unwrap();
    // The row as KQueen wrote it before targets were typed, then the migration.
    store.testing_set_target(c.id, "3").await.unwrap();
    store.testing_migrate_targets().await.unwrap();
    assert_eq!(
        s.k.tenancy()
            .quota(&s.alice, "team-a")
            .await
            .unwrap()
            .1
            .nodes,
        3,
        "the migrated scale counts against the quota"
    );
    engine.run_until_idle().await.unwrap();
    assert_eq!(scaled(&s, c.id).await, (3, ClusterState::Ready, None));
    // Rows already migrated are left alone.
    s.k.clusters()
        .scale_cluster(&s.alice, &c.id.to_string(), 2)
        .await
        .unwrap();
    store.testing_migrate_targets().await.unwrap();
    engine.run_until_idle().await.unwrap();
    assert_eq!(scaled(&s, c.id).await, (2, ClusterState::Ready, None));
}

async fn two_workers_never_run_an_operation_twice(db: TestDatabase) {
    let s = setup(db).await;
    let ops = Actor::cli(None);
    s.k.tenancy()
        .set_quota(&ops, "team-a", Quota::default())
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..24 {
        ids.push(s.request(&format!("ok-{i}")).await.unwrap().id);
    }
    let (a, b) = (
        s.engine("worker-a", Duration::from_secs(30)),
        s.engine("worker-b", Duration::from_secs(30)),
    );
    let (ra, rb) = tokio::join!(
        tokio::spawn(async move { a.run_until_idle().await.unwrap() }),
        tokio::spawn(async move { b.run_until_idle().await.unwrap() })
    );
    assert_eq!(ra.unwrap() + rb.unwrap(), 24);
    let creates = s.scripted.creates.lock().unwrap().clone();
    assert_eq!(creates.len(), 24);
    for (name, calls) in &creates {
        assert_eq!(
            *calls, 2,
            "{name}: one run of two calls, never a second run"
        );
    }
    for id in ids {
        assert_eq!(s.state(id).await, ClusterState::Ready);
    }
}

/// Requests racing each other and a running worker all get a proper answer: one winner per
/// name, a Conflict for the loser, never an internal error from a lock (SQLite).
async fn concurrent_requests_get_an_answer_while_workers_write(db: TestDatabase) {
    let s = Arc::new(setup(db).await);
    let ops = Actor::cli(None);
    s.k.tenancy()
        .set_quota(&ops, "team-a", Quota::default())
        .await
        .unwrap();
    let engine = s.engine("worker-a", Duration::from_secs(30));
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn({
        let stop = stop.clone();
        async move {
            while !stop.load(Ordering::Relaxed) {
                engine.run_until_idle().await.unwrap();
                tokio::task::yield_now().await;
            }
        }
    });
    let mut tasks = Vec::new();
    for i in 0..32 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.request(&format!("race-{}", i / 2)).await
        }));
    }
    let (mut won, mut conflicts) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::Conflict(m)) => {
                assert!(m.contains("already"), "{m}");
                conflicts += 1;
            }
            Err(e) => panic!("a request failed instead of winning or conflicting: {e}"),
        }
    }
    assert_eq!((won, conflicts), (16, 16));
    stop.store(true, Ordering::Relaxed);
    worker.await.unwrap();
}

async fn failures_timeouts_and_retries(db: TestDatabase) {
    let s = setup(db).await;
    let failed = s.request("fail-one").await.unwrap();
    let flaky = s.request("flaky-one").await.unwrap();
    let slow = s.request("slow-one").await.unwrap();
    // The slow one's template allows 1 minute; bring the deadline close instead of waiting.
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    store_set_deadline(&store, slow.id, 1).await;
    let mut e = EngineConfig::new(s.work.path().to_owned());
    e.poll_interval = Duration::from_millis(10);
    let engine = s.k.engine(e);
    engine.run_until_idle().await.unwrap();
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &failed.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Error);
    assert_eq!(d.cluster.error.as_deref(), Some("the installer said no"));
    assert_eq!(d.operations[0].state, OperationState::Failed);

    // A provisioner's kubeconfig with a credential plugin would run a command on this server
    // at every use: refused unless the provider allows plugins (only import providers can).
    let exec = s.request("ok-exec").await.unwrap();
    engine.run_until_idle().await.unwrap();
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &exec.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Error);
    let why = d.cluster.error.unwrap();
    assert!(why.contains("exec plugin"), "{why}");

    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &slow.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Error);
    assert!(
        d.cluster.error.as_deref().unwrap().starts_with("timed out"),
        "{:?}",
        d.cluster.error
    );

    // The transient error was rescheduled with back-off; run again once it is due.
    let d =
        s.k.clusters()
            .cluster_detail(&s.alice, &flaky.id.to_string())
            .await
            .unwrap();
    assert_eq!(d.cluster.state, ClusterState::Provisioning);
    assert!(d
        .events
        .iter()
        .any(|e| e.message.contains("network is down (retrying")));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    engine.run_until_idle().await.unwrap();
    assert_eq!(s.state(flaky.id).await, ClusterState::Ready);
}

async fn store_set_deadline(store: &kqueen_core::store::SqlStore, cluster: uuid::Uuid, secs: i64) {
    store
        .testing_set_deadline(
            cluster,
            kqueen_core::clock::now() + chrono::Duration::seconds(secs),
        )
        .await
        .unwrap();
}

async fn quota_refusals_and_time_to_live(db: TestDatabase) {
    let s = setup(db).await;
    let ops = Actor::cli(None);
    let q = Quota {
        max_clusters: Some(2),
        max_nodes: Some(4),
        cluster_ttl_hours: Some(1),
        max_shared_storage_bytes: Some(3 << 30),
    };
    assert!(matches!(
        s.k.tenancy().set_quota(&s.alice, "team-a", q).await,
        Err(Error::Forbidden)
    ));
    for bad in [0, (1 << 50) + 1, u64::MAX] {
        let refused =
            s.k.tenancy()
                .set_quota(
                    &ops,
                    "team-a",
                    Quota {
                        max_shared_storage_bytes: Some(bad),
                        ..q
                    },
                )
                .await;
        assert!(
            matches!(&refused, Err(Error::Invalid(v)) if v.field == "max_shared_storage_bytes"),
            "{bad}: {refused:?}"
        );
    }
    s.k.tenancy().set_quota(&ops, "team-a", q).await.unwrap();
    let (stored, used) = s.k.tenancy().quota(&s.alice, "team-a").await.unwrap();
    assert_eq!(
        stored, q,
        "every field is kept, the storage quota as a 64-bit number"
    );
    assert_eq!(used.shared_storage_bytes, 0);
    let first = s.request_nodes("ok-a", "3").await.unwrap();
    assert!(
        first.expires_at.is_some(),
        "the tenant's time-to-live applies"
    );
    let too_many_nodes = s.request_nodes("ok-b", "2").await;
    assert!(
        matches!(&too_many_nodes, Err(Error::Conflict(m)) if m.contains("at most 4 nodes")),
        "{too_many_nodes:?}"
    );
    s.request_nodes("ok-b", "1").await.unwrap();
    let third = s.request_nodes("ok-c", "1").await;
    assert!(
        matches!(&third, Err(Error::Conflict(m)) if m.contains("at most 2 clusters")),
        "{third:?}"
    );
    // Template range and name validation.
    assert!(matches!(
        s.request_nodes("ok-d", "9").await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(s.request("Bad_Name").await, Err(Error::Invalid(v)) if v.field == "name"));
    assert!(matches!(s.request("ok-a").await, Err(Error::Conflict(_))));
    // Bob cannot request in team-a.
    let bobs =
        s.k.clusters()
            .request_cluster(
                &s.bob,
                ClusterRequest {
                    tenant: Some("team-a".into()),
                    name: "x".into(),
                    template: "small".into(),
                    parameters: Default::default(),
                },
            )
            .await;
    assert!(matches!(bobs, Err(Error::NotFound(_))));

    let engine = s.engine("w", Duration::from_secs(30));
    engine.run_until_idle().await.unwrap();
    assert_eq!(engine.sweep_expired().await.unwrap(), 0, "not expired yet");
    let store = kqueen_core::store::connect(s._db.url()).await.unwrap();
    store
        .testing_set_expiry(
            first.id,
            kqueen_core::clock::now() - chrono::Duration::seconds(1),
        )
        .await
        .unwrap();
    assert_eq!(engine.sweep_expired().await.unwrap(), 1);
    assert_eq!(s.state(first.id).await, ClusterState::Deleting);
    engine.run_until_idle().await.unwrap();
    assert!(s
        .k
        .clusters()
        .cluster_detail(&s.alice, &first.id.to_string())
        .await
        .is_err());
    let expired =
        s.k.audit()
            .audit_events(
                &ops,
                &AuditQuery {
                    action: Some("cluster.expire".into()),
                    ..Default::default()
                },
                Page::default(),
            )
            .await
            .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].actor, "system");
}

/// What a page shows of a running operation is what the worker is doing, from the first
/// second: "Starting" once a worker has it, then the provisioner's step and progress while
/// its call still runs (not only when the lease is renewed).
async fn progress_is_shown_while_the_provisioner_still_runs(db: TestDatabase) {
    let s = setup(db).await;
    let mute = s.request("mute-one").await.unwrap();
    let live = s.request("live-one").await.unwrap();
    let operation = |id: uuid::Uuid| {
        let k = &s.k;
        let alice = &s.alice;
        async move {
            k.clusters()
                .cluster_detail(alice, &id.to_string())
                .await
                .unwrap()
        }
    };
    assert_eq!(
        operation(mute.id).await.operations[0].step,
        kqueen_core::cluster::WAITING_STEP
    );
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(s.engine("w1", Duration::from_secs(30)).run(shutdown));
    let started = std::time::Instant::now();
    loop {
        let (m, l) = (operation(mute.id).await, operation(live.id).await);
        let live_step = (l.operations[0].step.clone(), l.operations[0].progress);
        if m.operations[0].step == kqueen_core::cluster::STARTING_STEP
            && live_step == ("Booting machines".to_owned(), 10)
        {
            assert!(l
                .events
                .iter()
                .any(|e| e.kind == EventKind::Step && e.message == "Booting machines"));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "still {:?} and {live_step:?}",
            m.operations[0].step
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(true).unwrap();
    worker.await.unwrap();
}

/// Runs every scenario on a fresh database of each backend.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $name() { super::$name(super::TestDatabase::sqlite()).await; })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $name() {
                let Some(db) = super::TestDatabase::postgres().await else { return };
                super::$name(db).await;
            })*
        }
    };
}

on_both_databases!(
    request_returns_at_once_and_the_engine_provisions,
    a_killed_worker_is_resumed_by_another_after_its_lease,
    a_worker_that_lost_its_lease_cannot_write,
    a_stale_claim_of_the_same_process_cannot_write,
    a_delete_cancels_an_unfinished_create,
    scaling_stays_within_the_template,
    scale_targets_count_against_the_node_quota_until_done,
    an_operation_whose_target_cannot_be_read_fails_saying_so,
    an_operation_whose_checkpoint_cannot_be_read_fails_saying_so,
    day2_requests_fail_on_a_template_the_store_cannot_read,
    targets_stored_before_they_were_typed_are_migrated,
    two_workers_never_run_an_operation_twice,
    concurrent_requests_get_an_answer_while_workers_write,
    failures_timeouts_and_retries,
    quota_refusals_and_time_to_live,
    progress_is_shown_while_the_provisioner_still_runs,
);
