//! KQueen as an operator runs it: its image (the offline build of the Dockerfile's layout,
//! the test kit's `kqueen_image`, with this build's binary) as the three replicas of
//! `deploy/kubernetes` (an overlay of the `kubernetes-1.20` one, rendered by the real
//! Kustomize) on a real kubelet (the node lab, joined with `kubeadm join` to an admin
//! cluster KQueen made), all on one PostgreSQL. 100 clusters are requested at once through
//! the replicas' API; mid-way the replica holding the most operations is killed (SIGKILL, no
//! graceful stop) and its pod deleted as `kubectl delete pod --grace-period 0 --force` does;
//! every cluster still ends Ready, each provisioned by exactly one Jenkins build, no
//! operation is left pending or running (those the killed replica held were finished by
//! another), the inventory sync runs on one living replica only, and the Deployment is back
//! to three ready replicas.
//!
//! Traffic stays on this machine: the pods reach PostgreSQL (127.0.0.1:5432) and the fake
//! Jenkins through relays on the lab's bridge; the test reaches the pods at their addresses
//! on that bridge, round-robin, as the Service would (kube-proxy is not among the binaries).
//! Needs the binaries of `../shared/kube`, containers and PostgreSQL; skips saying why.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kqueen_core::cluster::ClusterState;
use kqueen_core::workloads::manifest::{parse_manifests, ManifestLimits};
use kqueen_testkit::fake_jenkins::{FakeJenkins, JobSpec, TOKEN, USER};
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::node_lab::cluster::{join_until_ready, Binaries};
use kqueen_testkit::node_lab::{kqueen_image, NodeLab, Relay};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kqueen_testkit::wait::within;
use kqueen_testkit::TestDatabase;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const NAMESPACE: &str = "kqueen";
const IMAGE: &str = "kqueen.local/kqueen:test";
const PUBLIC_URL: &str = "http://kqueen.test";
const CLUSTERS: usize = 100;
/// `id:base64(32 bytes)`, as the example Secret asks.
const VAULT_KEYS: &str = "k1:S1F1ZWVuIHJlcGxpY2FzOiB0ZXN0IHZhdWx0IGtleSE=";
const OPS_PASSWORD: &str = "replicas-operator-password";
/// What the Jenkins job archives: the new cluster's kubeconfig (no API server answers at
/// this address; the inventory then says so, the cluster stays Ready).
const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    \
    server: https://127.0.0.1:9\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n\
    current-context: c\nusers:\n- name: u\n  user: {token: jenkins-made-token}\n";

async fn client_of(kubeconfig: &str) -> kube::Client {
    let config = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Runs the `kqueen` binary on this machine against the replicas' database, as an
/// operator's first steps do (`user create`, `tenant create`).
fn kqueen_on_host(db_url: &str, args: &[&str], stdin: Option<&str>) {
    use std::io::Write;
    let data = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kqueen"))
        .args(args)
        .env("KQUEEN_DATABASE_URL", db_url)
        .env("KQUEEN_VAULT_KEYS", VAULT_KEYS)
        .env("KQUEEN_DATA_DIR", data.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kqueen {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The overlay an operator of this lab writes over the repository's `kubernetes-1.20` one
/// (Kustomize takes only relative paths): the lab's image (never pulled), the portal's
/// address for this test, short operation leases so that a killed replica's operations move
/// on quickly, inventory turns every 10 s.
fn lab_overlay(dir: &Path) -> String {
    let repo = std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).unwrap();
    let up = "../".repeat(dir.components().count() - 1);
    let base = format!(
        "{up}{}/deploy/kubernetes/overlays/kubernetes-1.20",
        repo.display().to_string().trim_start_matches('/')
    );
    let (name, tag) = IMAGE.rsplit_once(':').unwrap();
    format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
         namespace: {NAMESPACE}\nresources:\n  - {base}\n\
         images:\n  - {{name: kqueen, newName: {name}, newTag: {tag}}}\n\
         patches:\n\
         \x20 - target: {{kind: ConfigMap, name: kqueen}}\n\
         \x20   patch: |\n\
         \x20     - {{op: replace, path: /data/KQUEEN_PUBLIC_URL, value: \"{PUBLIC_URL}\"}}\n\
         \x20     - {{op: replace, path: /data/KQUEEN_LEASE_SECONDS, value: \"5\"}}\n\
         \x20     - {{op: replace, path: /data/KQUEEN_LOG_FORMAT, value: text}}\n\
         \x20     - {{op: add, path: /data/KQUEEN_INVENTORY_INTERVAL_SECONDS, value: \"10\"}}\n\
         \x20 - target: {{kind: Deployment, name: kqueen}}\n\
         \x20   patch: |\n\
         \x20     - {{op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, \
         value: Never}}\n"
    )
}

/// Renders the lab's overlay with the real Kustomize (`kubectl kustomize`) and applies
/// every object server-side, as `kubectl apply -k` does.
async fn apply_manifests(admin: &kube::Client) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        lab_overlay(dir.path()),
    )
    .unwrap();
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", &dir.path().display().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let objects = parse_manifests(&text, &ManifestLimits::default()).unwrap();
    let discovery = kube::discovery::Discovery::new(admin.clone())
        .run()
        .await
        .unwrap();
    for o in objects {
        let (group, version) = o
            .api_version
            .split_once('/')
            .unwrap_or(("", &o.api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, &o.kind);
        let (resource, _) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{} {} is not served", o.api_version, o.kind));
        let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NAMESPACE, &resource);
        api.patch(
            &o.name,
            &PatchParams::apply("kqueen-test"),
            &Patch::Apply(&o.object),
        )
        .await
        .unwrap_or_else(|e| panic!("{} {}: {e}", o.kind, o.name));
    }
}

/// The ready KQueen pods' addresses (`ip:3000`), or what the pods say.
async fn ready_pods(pods: &Api<Pod>) -> Result<Vec<String>, String> {
    let list = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=kqueen"))
        .await
        .map_err(|e| e.to_string())?;
    let mut ready = Vec::new();
    let mut said = Vec::new();
    for pod in list.items {
        let deleting = pod.metadata.deletion_timestamp.is_some();
        let status = pod.status.unwrap_or_default();
        let is_ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        match (is_ready && !deleting, status.pod_ip) {
            (true, Some(ip)) => ready.push(format!("{ip}:3000")),
            _ => said.push(format!(
                "{:?} {:?} {:?}",
                pod.metadata.name, status.phase, status.container_statuses
            )),
        }
    }
    if ready.len() == 3 {
        Ok(ready)
    } else {
        Err(format!("{} ready; {said:?}", ready.len()))
    }
}

/// The replicas' API with an operator's token, each call to the next pod (round-robin, as
/// the Service spreads connections); a pod that does not answer is skipped.
struct Replicas {
    http: reqwest::Client,
    token: String,
    pods: Vec<String>,
}

impl Replicas {
    async fn call(
        &self,
        turn: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, body, _) = self.call_counting(turn, method, path, body).await;
        (status, body)
    }

    /// As `call`, and whether a replica failed to answer first (a request sent again: its
    /// first sending may have been carried out).
    async fn call_counting(
        &self,
        turn: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value, bool) {
        let mut last = String::new();
        for attempt in 0..self.pods.len() * 3 {
            let pod = &self.pods[(turn + attempt) % self.pods.len()];
            let mut req = self
                .http
                .request(method.clone(), format!("http://{pod}{path}"))
                .bearer_auth(&self.token);
            if let Some(b) = &body {
                req = req.json(b);
            }
            match req.send().await {
                Ok(res) => {
                    let status = res.status();
                    let text = res.text().await.unwrap_or_default();
                    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    return (status, body, attempt > 0);
                }
                Err(e) => {
                    last = format!("{pod}: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        panic!("no replica answered {method} {path}: {last}");
    }
}

/// The KQueen pod holding the most running operations now, and their ids; none: why not.
async fn holder(pods: &Api<Pod>, pool: &sqlx::PgPool) -> Result<(String, Vec<uuid::Uuid>), String> {
    let running: Vec<(uuid::Uuid, String)> = sqlx::query_as(
        "SELECT id, lease_owner FROM operations WHERE state = 'running' \
         AND lease_owner IS NOT NULL",
    )
    .fetch_all(pool)
    .await
    .map_err(|e| e.to_string())?;
    let names: Vec<String> = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=kqueen"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names
        .into_iter()
        .map(|name| {
            let held: Vec<uuid::Uuid> = running
                .iter()
                .filter(|(_, owner)| owner.starts_with(&format!("{name}-")))
                .map(|(id, _)| *id)
                .collect();
            (name, held)
        })
        .max_by_key(|(_, held)| held.len())
        .filter(|(_, held)| !held.is_empty())
        .ok_or_else(|| format!("no pod holds one of {running:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_a_real_node_provision_every_cluster_once_though_one_is_killed() {
    let Some(binaries) = Binaries::or_skip() else {
        return;
    };
    if std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_err()
    {
        println!("skipped: kubectl (its Kustomize renders the manifests) is not installed");
        return;
    }
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let Some(lab) = NodeLab::start().await else {
        return;
    };

    // The admin cluster: a hosted cluster KQueen made (runtime process), with the lab's node.
    let h = HostedKqueen::start(TlsEtcd::start().await, "platform=platform:member").await;
    let olga = h.person("olga", "platform").await;
    let (stop_engine, shutdown) = tokio::sync::watch::channel(false);
    let engine = tokio::spawn(h.k.engine(h.engine_config()).run(shutdown));
    h.offer(
        "shared",
        &[("versions", &binaries.process_versions())],
        ("hosted", ""),
    )
    .await;
    let admin_id = h
        .request(&olga, ("platform", "admin", "hosted"), None)
        .await;
    let _processes = h.processes_of(&admin_id);
    within(Duration::from_secs(120), "admin cluster Ready", || async {
        let d = h.k.clusters().cluster_detail(&h.ops, &admin_id).await;
        match d {
            Ok(d) if d.cluster.state == ClusterState::Ready => Ok(()),
            other => Err(format!("{:?}", other.map(|d| d.cluster.state))),
        }
    })
    .await;
    let admin = client_of(&h.admin_kubeconfig(&admin_id).await).await;
    let join = h.k.clusters().join_info(&olga, &admin_id).await.unwrap();
    join_until_ready(&lab, &join.command, &admin, Duration::from_secs(240))
        .await
        .unwrap();

    // What the replicas reach on the lab's bridge: PostgreSQL and Jenkins.
    let url = reqwest::Url::parse(db.url()).unwrap();
    let postgres = std::net::SocketAddr::new(
        url.host_str().unwrap().parse().unwrap(),
        url.port().unwrap_or(5432),
    );
    let relay = Relay::start(lab.gateway(), postgres).await.unwrap();
    let mut pod_url = url.clone();
    pod_url
        .set_host(Some(&relay.addr.ip().to_string()))
        .unwrap();
    pod_url.set_port(Some(relay.addr.port())).unwrap();
    let jenkins = FakeJenkins::start_on(lab.gateway()).await;
    let mut job = JobSpec::new("SUCCESS", "creating the cluster\ndone\n")
        .artifact("kubeconfig", KUBECONFIG.as_bytes());
    (job.queue_polls, job.build_polls) = (2, 2);
    jenkins.add_job("clusters", job);

    // The operator's first steps, on the database the replicas will use.
    let host_url = db.url().to_owned();
    kqueen_on_host(
        &host_url,
        &["user", "create", "ops", "--operator", "--password-stdin"],
        Some(&format!("{OPS_PASSWORD}\n")),
    );
    kqueen_on_host(&host_url, &["tenant", "create", "team-a"], None);

    // The image, and the manifests with the Secret an operator writes.
    let public = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../public"));
    let spec =
        kqueen_image::spec(IMAGE, Path::new(env!("CARGO_BIN_EXE_kqueen")), Some(public)).unwrap();
    lab.import(&spec);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "kqueen"},
        "stringData": {"KQUEEN_DATABASE_URL": pod_url.as_str(), "KQUEEN_VAULT_KEYS": VAULT_KEYS},
    }))
    .unwrap();
    Api::<Secret>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    apply_manifests(&admin).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    let ready = within(Duration::from_secs(240), "3 replicas ready", || {
        ready_pods(&pods)
    })
    .await;

    // The operator logs in on one replica, makes an API token, defines Jenkins and a template.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let browser = reqwest::Client::builder()
        .no_proxy()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let first = &ready[0];
    let res = browser
        .post(format!("http://{first}/auth/local"))
        .header("origin", PUBLIC_URL)
        .form(&[
            ("username", "ops"),
            ("password", OPS_PASSWORD),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::SEE_OTHER,
        "login: {:?}",
        res.text().await
    );
    let created: Value = browser
        .post(format!("http://{first}/api/v1/tokens"))
        .header("origin", PUBLIC_URL)
        .json(&json!({"name": "replicas", "days": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let api = Replicas {
        http,
        token: created["secret"].as_str().unwrap().to_owned(),
        pods: ready.clone(),
    };
    let provider = json!({"name": "ci", "kind": "jenkins", "settings": {
        "url": jenkins.url, "job": "clusters", "username": USER, "api_token": TOKEN,
        "poll_seconds": 1}});
    let (status, body) = api
        .call(0, Method::POST, "/api/v1/providers", Some(provider))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let template = json!({"name": "ci", "provider": "ci"});
    let (status, body) = api
        .call(1, Method::POST, "/api/v1/templates", Some(template))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let pool = sqlx::PgPool::connect(db.url()).await.unwrap();
    // 100 requests at once, spread over the replicas; one replica killed after 30 answers.
    let api = std::sync::Arc::new(api);
    let (answered, mut answers) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..CLUSTERS {
        let api = api.clone();
        let answered = answered.clone();
        tokio::spawn(async move {
            let body = json!({"tenant": "team-a", "name": format!("c-{n:03}"), "template": "ci"});
            let (status, body, again) = api
                .call_counting(n, Method::POST, "/api/v1/clusters", Some(body))
                .await;
            let _ = answered.send((n, status, body, again));
        });
    }
    drop(answered);
    let mut accepted = BTreeMap::new();
    let mut killed = None;
    let mut in_flight = Vec::new();
    while let Some((n, status, body, again)) = answers.recv().await {
        // Sent again after the killed replica took it and died before answering: the name
        // is taken by that first request, which goes on like the others.
        let taken = again && status == StatusCode::CONFLICT;
        assert!(
            status == StatusCode::ACCEPTED || taken,
            "c-{n:03}: {status} {body}"
        );
        accepted.insert(n, taken);
        if accepted.len() == 30 {
            // The replica holding the most operations right now (a lease names its pod).
            let (victim, held) = within(Duration::from_secs(30), "a replica at work", || {
                holder(&pods, &pool)
            })
            .await;
            println!("{victim} holds {} running operations", held.len());
            in_flight = held;
            // Killed outright (no graceful stop: nothing is given up, its leases must run
            // out), then deleted as `kubectl delete pod --grace-period 0 --force` does.
            let pod = pods.get(&victim).await.unwrap();
            let container = pod.status.unwrap().container_statuses.unwrap()[0]
                .container_id
                .clone()
                .unwrap();
            let task = container.trim_start_matches("containerd://");
            lab.ctr(&["tasks", "kill", "--signal", "SIGKILL", task])
                .unwrap();
            let force = DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            };
            pods.delete(&victim, &force).await.unwrap();
            println!("killed {victim} (SIGKILL) after 30 answers");
            killed = Some(victim);
        }
    }
    assert_eq!(accepted.len(), CLUSTERS);
    let killed = killed.unwrap();
    println!(
        "{} requests sent again after the kill were already taken",
        accepted.values().filter(|t| **t).count()
    );

    // Every cluster Ready, whichever replica took its operation over.
    within(Duration::from_secs(300), "100 clusters Ready", || async {
        let (_, body) = api
            .call(
                0,
                Method::GET,
                "/api/v1/clusters?tenant=team-a&state=ready&limit=1",
                None,
            )
            .await;
        let (_, errors) = api
            .call(
                1,
                Method::GET,
                "/api/v1/clusters?tenant=team-a&state=error&limit=5",
                None,
            )
            .await;
        assert_eq!(errors["total"], 0, "{errors}");
        (body["total"] == CLUSTERS)
            .then_some(())
            .ok_or_else(|| format!("{body}"))
    })
    .await;
    // Each provisioned by one build: triggers sent again were folded into the queued one.
    let (builds, triggers) = {
        let state = jenkins.state();
        let mut builds: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        for t in &state.triggers {
            if state.queue[&t.queue_id].build.is_some() {
                builds
                    .entry(t.params["CLUSTER_NAME"].clone())
                    .or_default()
                    .insert(t.queue_id);
            }
        }
        (builds, state.triggers.len())
    };
    assert_eq!(builds.len(), CLUSTERS);
    for (cluster, queued) in &builds {
        assert_eq!(
            queued.len(),
            1,
            "{cluster} was built {} times",
            queued.len()
        );
    }
    println!("{triggers} triggers for {CLUSTERS} builds");
    // No operation is left behind; those the killed replica held were finished by another.
    let (open,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM operations WHERE state IN ('pending', 'running')")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(open, 0);
    let taken_over: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT state, lease_owner FROM operations WHERE id = ANY($1)")
            .bind(&in_flight)
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(taken_over.len(), in_flight.len());
    assert!(
        taken_over.iter().all(|(state, _)| state == "succeeded"),
        "{taken_over:?}"
    );
    let after = within(Duration::from_secs(120), "3 replicas again", || {
        ready_pods(&pods)
    })
    .await;
    assert!(
        pods.get_opt(&killed).await.unwrap().is_none(),
        "{killed} is gone"
    );
    // Periodic work on one replica at a time: the inventory sync's lease comes to name a
    // living pod (the killed one's runs out), and of the living pods only that one ever took
    // the job (its log says when).
    let ran = within(
        Duration::from_secs(90),
        "inventory sync on one living pod",
        || async {
            let (holder,): (String,) =
                sqlx::query_as("SELECT owner FROM job_leases WHERE job = 'inventory-sync'")
                    .fetch_one(&pool)
                    .await
                    .map_err(|e| e.to_string())?;
            let mut ran = Vec::new();
            let living = pods
                .list(&ListParams::default().labels("app.kubernetes.io/name=kqueen"))
                .await
                .map_err(|e| e.to_string())?
                .items;
            for pod in living {
                let name = pod.metadata.name.unwrap_or_default();
                let log = pods
                    .logs(&name, &Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
                if log.lines().any(|l| {
                    l.contains("this replica runs the job") && l.contains("inventory-sync")
                }) {
                    ran.push(name);
                }
            }
            match ran.as_slice() {
                [one] if holder.starts_with(&format!("{one}-")) => Ok(ran),
                _ => Err(format!("held by {holder}; taken by {ran:?}")),
            }
        },
    )
    .await;
    assert_ne!(ran[0], killed, "the killed pod cannot run anything");
    pool.close().await;
    let deployment = Api::<Deployment>::namespaced(admin.clone(), NAMESPACE)
        .get("kqueen")
        .await
        .unwrap();
    assert_eq!(
        deployment.status.unwrap().ready_replicas,
        Some(3),
        "{after:?}"
    );

    // The Namespace is deleted (the lab, dropped last, stops whatever still runs), then the
    // admin cluster's engine stops.
    Api::<Namespace>::all(admin.clone())
        .delete(NAMESPACE, &DeleteParams::default())
        .await
        .unwrap();
    stop_engine.send(true).unwrap();
    engine.await.unwrap();
}
