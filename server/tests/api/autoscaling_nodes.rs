//! Autoscaling with real nodes: a `command` provider whose create and scale commands ask the
//! test's machine pool (`node_lab::pool`, the provider's "cloud") for machines, each a real
//! kubelet v1.20.2 on a containerd of its own, registering with a real kube-apiserver where
//! the real kube-scheduler and controller manager run. The scripts write what they were
//! asked (`count [node to remove]`) and wait until the pool has started or stopped the
//! machines; a node offers 500m of CPU.
//!
//! Pods the scheduler cannot place make KQueen ask for nodes; the quota stops it (the
//! tenant may have 2 nodes: a third is never asked for, the hold is said); a new node joins
//! and runs a waiting pod. Two nodes under half used for the set delay: one is drained (its
//! pod evicted, terminated by its kubelet and started again by its ReplicaSet on the other
//! node), its machine stopped, its Node object deleted.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, define, timeline, wait_for_state};
use crate::helpers::TestApp;
use crate::replace_node::script;
use kqueen_testkit::apiserver::RealApiServer;
use kqueen_testkit::node_lab::cluster::node_ready;
use kqueen_testkit::node_lab::pool::NodePool;
use kqueen_testkit::node_lab::BUSYBOX_IMAGE;
use kqueen_testkit::TestDatabase;

/// The pool as the provider's cloud: it serves the scripts' requests (lines of
/// `requests`, answered by as many lines of `done`) until dropped, then stops every machine.
struct Cloud {
    pool: Arc<Mutex<NodePool>>,
    stop: Arc<AtomicBool>,
    serving: Option<std::thread::JoinHandle<()>>,
}

impl Cloud {
    fn serve(pool: NodePool, dir: &Path) -> Self {
        let pool = Arc::new(Mutex::new(pool));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s, dir) = (pool.clone(), stop.clone(), dir.to_path_buf());
        let serving = std::thread::spawn(move || {
            let mut handled = 0;
            while !s.load(Ordering::Relaxed) {
                let asked = read_lines(&dir.join("requests"));
                for request in asked.iter().skip(handled) {
                    let answer = match fulfil(&mut p.lock().unwrap(), request) {
                        Ok(()) => "ok".to_owned(),
                        Err(e) => format!("error: {e}"),
                    };
                    append(&dir.join("done"), &answer);
                    handled += 1;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Self {
            pool,
            stop,
            serving: Some(serving),
        }
    }

    fn names(&self) -> Vec<String> {
        self.pool.lock().unwrap().names()
    }

    fn log(&self, node: &str) -> String {
        self.pool.lock().unwrap().log(node, "kubelet.log")
    }
}

impl Drop for Cloud {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.serving.take() {
            let _ = t.join();
        }
        // The pool goes with the last reference: every machine stopped, the host restored.
    }
}

/// One request: `count [node]`: the named node stopped first, then machines started or
/// stopped (newest first) until there are `count`.
fn fulfil(pool: &mut NodePool, request: &str) -> Result<(), String> {
    let mut words = request.split_whitespace();
    let count: usize = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| format!("no node count in {request:?}"))?;
    if let Some(node) = words.next() {
        if !pool.remove(node) {
            return Err(format!("no machine {node}"));
        }
    }
    while pool.len() < count {
        pool.add()?;
    }
    while pool.len() > count {
        let newest = pool.names().pop().unwrap_or_default();
        pool.remove(&newest);
    }
    Ok(())
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// The scripts' part: ask, then wait (at most 2 min) for the answer.
fn ask_the_cloud(dir: &Path, what: &str) -> String {
    let (requests, done) = (dir.join("requests"), dir.join("done"));
    format!(
        "echo \"{what}\" >> '{r}'\nn=$(wc -l < '{r}')\ni=0\n\
         while [ \"$(cat '{d}' 2>/dev/null | wc -l)\" -lt \"$n\" ]; do\n\
           i=$((i + 1)); [ $i -lt 600 ] || {{ echo 'no machines after 2 min' >&2; exit 1; }}\n\
           sleep 0.2\ndone\n\
         answer=$(sed -n \"${{n}}p\" '{d}')\n\
         [ \"$answer\" = ok ] || {{ echo \"$answer\" >&2; exit 1; }}\n",
        r = requests.display(),
        d = done.display(),
    )
}

/// Dropped in this order: KQueen, the machines, the control plane.
struct World {
    app: TestApp,
    cloud: Cloud,
    kube: RealApiServer,
    client: kube::Client,
    olga: reqwest::Client,
    tim: reqwest::Client,
    web: String,
    /// The scripts and the requests they made.
    dir: tempfile::TempDir,
}

/// The number of CPUs kubelets report (cAdvisor counts the processors).
fn cpus() -> u32 {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1)
}

async fn world() -> Option<World> {
    // Each prints why when it cannot start: the test then skips.
    let mut kube = RealApiServer::start().await?;
    if !kube.has_controller_manager() || !kube.start_scheduler() {
        return None;
    }
    // Each node offers 500m of CPU, whatever the machine has.
    let reserved = format!("{}m", (cpus() * 1000).saturating_sub(500));
    let pool = NodePool::start(&kube.admin_kubeconfig(), &reserved).await?;
    let dir_guard = tempfile::tempdir().unwrap();
    let dir = dir_guard.path();
    let cloud = Cloud::serve(pool, dir);

    let app = TestApp::spawn_with_engine(
        TestDatabase::sqlite(),
        |_, _| {},
        |e| e.autoscale_interval = Duration::from_secs(1),
    )
    .await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let admin = dir.join("admin.kubeconfig");
    std::fs::write(&admin, kube.admin_kubeconfig()).unwrap();
    let create = script(
        dir,
        "create.sh",
        &format!(
            "{}cp '{}' \"$KQ_KUBECONFIG\"\n",
            ask_the_cloud(dir, "$KQ_PARAM_NODE_COUNT"),
            admin.display()
        ),
    );
    let scale = script(
        dir,
        "scale.sh",
        &ask_the_cloud(dir, "$KQ_NODE_COUNT ${KQ_REMOVE_NODE:-}"),
    );
    define(
        &app,
        &olga,
        json!({"name": "lab", "kind": "command", "settings": {
            "create_command": create, "scale_command": scale, "timeout_seconds": 240}}),
        json!({"name": "small", "provider": "lab", "tenants": ["team-a"]}),
    )
    .await;
    let (status, body) = call(
        &olga,
        &app,
        Method::PUT,
        "/api/v1/tenants/team-a/quota",
        Some(json!({"max_nodes": 2})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(
        &tim,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(
            json!({"tenant": "team-a", "name": "web", "template": "small",
            "parameters": {"node_count": "1"}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let web = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &tim, &web, "ready").await;
    let parsed =
        kqueen_core::kubernetes::parse_kubeconfig(&kube.admin_kubeconfig(), None, false).unwrap();
    let client = kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .unwrap();
    Some(World {
        app,
        kube,
        client,
        olga,
        tim,
        web,
        cloud,
        dir: dir_guard,
    })
}

impl World {
    /// Waits (at most `limit`) until the Ready nodes are exactly `names`.
    async fn ready_nodes(&self, names: &[String], limit: Duration) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let started = Instant::now();
        loop {
            let mut ready: Vec<String> = nodes
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter(node_ready)
                .filter_map(|n| n.metadata.name)
                .collect();
            ready.sort();
            if ready == names {
                return;
            }
            assert!(
                started.elapsed() < limit,
                "Ready nodes {ready:?}, not {names:?}, after {limit:?}\n{}",
                names
                    .iter()
                    .map(|n| format!("{n}: {}", self.cloud.log(n)))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Deployment `name` of `replicas` pods asking for `cpu` each, spread over the nodes
    /// where they can be; they stop at once when deleted.
    async fn deploy(&self, name: &str, replicas: i32, cpu: &str) {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), "default");
        let spec = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {
                        "automountServiceAccountToken": false,
                        "terminationGracePeriodSeconds": 1,
                        "affinity": {"podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [{
                                "weight": 100, "podAffinityTerm": {
                                    "topologyKey": "kubernetes.io/hostname",
                                    "labelSelector": {"matchLabels": {"app": name}}}}]}},
                        "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                            "imagePullPolicy": "Never",
                            "command": ["/bin/busybox", "sleep", "3600"],
                            "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}}}]}}}});
        deployments
            .patch(
                name,
                &PatchParams::apply("autoscaling-nodes-test").force(),
                &Patch::Apply(&spec),
            )
            .await
            .unwrap();
    }

    /// The pods of app `name` running (container started), with their nodes.
    async fn running(&self, name: &str) -> Vec<(String, String)> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "default");
        let list = pods
            .list(&ListParams::default().labels(&format!("app={name}")))
            .await
            .unwrap();
        list.items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                p.status.as_ref().is_some_and(|s| {
                    s.phase.as_deref() == Some("Running")
                        && s.container_statuses
                            .as_ref()
                            .is_some_and(|c| c.iter().all(|c| c.ready))
                })
            })
            .map(|p| {
                let node = p.spec.and_then(|s| s.node_name).unwrap_or_default();
                (p.metadata.name.unwrap_or_default(), node)
            })
            .collect()
    }

    /// Waits (at most `limit`) until `count` pods of app `name` run: them.
    async fn until_running(
        &self,
        name: &str,
        count: usize,
        limit: Duration,
    ) -> Vec<(String, String)> {
        let started = Instant::now();
        loop {
            let running = self.running(name).await;
            if running.len() == count {
                return running;
            }
            assert!(
                started.elapsed() < limit,
                "{} pods of {name} run, not {count}, after {limit:?}: {running:?}\n\
                 autoscaling: {}\nscheduler: {}",
                running.len(),
                self.autoscaling().await,
                self.kube.scheduler_log()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn autoscaling(&self) -> Value {
        let path = format!("/api/v1/clusters/{}/autoscaling", self.web);
        let (status, body) = call(&self.tim, &self.app, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Waits (at most `limit`) until a decision on the timeline says `words`: the decision.
    async fn decided(&self, words: &str, limit: Duration) -> String {
        let started = Instant::now();
        loop {
            let timeline = self.timeline().await;
            if let Some(said) = timeline
                .iter()
                .find(|m| m.starts_with("Autoscaling: ") && m.contains(words))
            {
                return said.clone();
            }
            assert!(
                started.elapsed() < limit,
                "no decision saying {words:?} in {limit:?}: {timeline:#?}\n{}\nasked: {:?}",
                self.autoscaling().await,
                self.asked()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// What the scripts asked the cloud for, in order.
    fn asked(&self) -> Vec<String> {
        read_lines(&self.dir.path().join("requests"))
            .iter()
            .map(|l| l.trim().to_owned())
            .collect()
    }

    /// Waits (at most `limit`) until the scale-down has run: the scale command was given
    /// the node to remove, its Node object is deleted and the cluster is Ready: the node.
    async fn removed(&self, limit: Duration) -> String {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let path = format!("/api/v1/clusters/{}", self.web);
        let started = Instant::now();
        loop {
            let asked = self.asked();
            let node = asked
                .get(2)
                .and_then(|a| a.strip_prefix("1 "))
                .map(str::to_owned);
            let (_, cluster) = call(&self.tim, &self.app, Method::GET, &path, None).await;
            if let Some(node) = node {
                if cluster["state"] == "ready" && nodes.get_opt(&node).await.unwrap().is_none() {
                    assert_eq!(asked.len(), 3, "{asked:?}");
                    return node;
                }
            }
            assert!(
                started.elapsed() < limit,
                "no node removed in {limit:?}: asked {asked:?}, cluster {}, timeline {:#?}",
                cluster["state"],
                self.timeline().await
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn timeline(&self) -> Vec<String> {
        timeline(&self.app, &self.tim, &self.web).await
    }
}

#[tokio::test]
async fn real_nodes_join_for_waiting_pods_within_quota_and_an_idle_one_is_drained_away() {
    let Some(w) = world().await else { return };
    let first = w.cloud.names();
    assert_eq!(
        first,
        ["127.0.0.2"],
        "the create command asked for one machine"
    );
    w.ready_nodes(&first, Duration::from_secs(90)).await;

    let (status, body) = call(
        &w.olga,
        &w.app,
        Method::PUT,
        &format!("/api/v1/clusters/{}/autoscaling", w.web),
        Some(
            json!({"min_nodes": 1, "max_nodes": 3, "scale_down_utilisation": 50,
            "scale_down_after_secs": 60}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Three pods of 300m: one per node. Two wait; the quota allows one more node only.
    w.deploy("big", 3, "300m").await;
    w.decided(
        "(1 → 2), as many as the tenant's node quota allows",
        Duration::from_secs(60),
    )
    .await;
    let both = vec!["127.0.0.2".to_owned(), "127.0.0.3".to_owned()];
    w.ready_nodes(&both, Duration::from_secs(120)).await;
    let running = w.until_running("big", 2, Duration::from_secs(90)).await;
    let mut on: Vec<&str> = running.iter().map(|(_, n)| n.as_str()).collect();
    on.sort_unstable();
    assert_eq!(on, ["127.0.0.2", "127.0.0.3"], "one pod on each node");
    let held = w
        .decided(
            "the tenant's node quota allows no more nodes",
            Duration::from_secs(60),
        )
        .await;
    assert!(held.contains("cannot be scheduled (big-"), "{held}");
    // Never past the quota: still two machines, two asks (create, one scale).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(w.cloud.names(), both);
    assert_eq!(w.asked(), ["1", "2"]);

    // Smaller work, one pod on each node: both under half used. After the delay one is
    // drained, its pod evicted and run again on the other, and its machine stopped.
    let deployments: Api<Deployment> = Api::namespaced(w.client.clone(), "default");
    deployments
        .delete("big", &DeleteParams::foreground())
        .await
        .unwrap();
    w.deploy("small", 2, "200m").await;
    let before = w.until_running("small", 2, Duration::from_secs(90)).await;
    w.decided("has been under 50% used for", Duration::from_secs(60))
        .await;
    w.decided(
        "it is drained and removed (2 → 1)",
        Duration::from_secs(150),
    )
    .await;
    let removed = w.removed(Duration::from_secs(120)).await;
    let kept: Vec<String> = both.iter().filter(|n| **n != removed).cloned().collect();
    assert_eq!(w.cloud.names(), kept, "its machine stopped");
    w.ready_nodes(&kept, Duration::from_secs(30)).await;
    let after = w.until_running("small", 2, Duration::from_secs(90)).await;
    assert!(
        after.iter().all(|(_, node)| *node == kept[0]),
        "both pods run on the node kept: {after:?}"
    );
    let evicted: Vec<&String> = before
        .iter()
        .filter(|(_, node)| *node == removed)
        .map(|(pod, _)| pod)
        .collect();
    assert_eq!(evicted.len(), 1, "{before:?}");

    let timeline = w.timeline().await;
    assert!(
        timeline
            .iter()
            .any(|m| m.starts_with(&format!("evicted pod default/{}", evicted[0]))),
        "{timeline:#?}"
    );
    for words in [
        "(1 → 2), as many as the tenant's node quota allows",
        "but the tenant's node quota allows no more",
        "it is drained and removed (2 → 1)",
    ] {
        assert!(
            timeline
                .iter()
                .any(|m| m.starts_with("Autoscaling: ") && m.contains(words)),
            "{words:?} in {timeline:#?}"
        );
    }
}
