//! An in-process fake Kubernetes API server (axum on 127.0.0.1:0) with in-memory state.
//!
//! It speaks enough of the real API for kube's `Api<K>` to work unchanged: generic CRUD on
//! the resources in [`RESOURCES`] (get, list with label selectors, create, replace with
//! resourceVersion checks, JSON merge patch, delete), `Status` errors shaped like the real
//! server's (NotFound, AlreadyExists, Conflict, Invalid, Unauthorized, Forbidden), namespaces
//! that must exist before objects go into them, immutable `roleRef` on role bindings,
//! the ServiceAccount `token` subresource (TokenRequest), `status` subresources (merge patch),
//! and bearer-token authentication:
//! the admin token may do anything; tokens issued through TokenRequest authenticate only
//! while their ServiceAccount exists and may only read discovery endpoints (`/version`).
//!
//! Tests steer it with [`FakeKube::fail`] (answer an HTTP error for matching requests),
//! [`FakeKube::insert`] (seed objects, e.g. nodes and pods for inventory tests),
//! [`FakeKube::object`] and [`FakeKube::requests`] (inspect what happened).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

/// The bearer token of the fake cluster's administrator.
pub const ADMIN_TOKEN: &str = "fake-admin-token-0123456789";

/// The resources the fake serves: (API prefix, plural, kind, namespaced).
pub const RESOURCES: &[(&str, &str, &str, bool)] = &[
    ("api/v1", "namespaces", "Namespace", false),
    ("api/v1", "serviceaccounts", "ServiceAccount", true),
    ("api/v1", "nodes", "Node", false),
    ("api/v1", "pods", "Pod", true),
    ("api/v1", "services", "Service", true),
    ("api/v1", "configmaps", "ConfigMap", true),
    ("api/v1", "secrets", "Secret", true),
    ("apis/apps/v1", "deployments", "Deployment", true),
    ("apis/apps/v1", "replicasets", "ReplicaSet", true),
    ("apis/apps/v1", "statefulsets", "StatefulSet", true),
    ("apis/apps/v1", "daemonsets", "DaemonSet", true),
    ("apis/batch/v1", "jobs", "Job", true),
    // Served like any resource once a test inserts NodeMetrics; an empty list means no
    // metrics-server, as on clusters without one (the real API answers 404 there).
    ("apis/metrics.k8s.io/v1beta1", "nodes", "NodeMetrics", false),
    (
        "apis/rbac.authorization.k8s.io/v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    (
        "apis/rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    (
        "apis/rbac.authorization.k8s.io/v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
];

/// A running fake API server; stops when dropped.
pub struct FakeKube {
    url: String,
    state: Arc<Mutex<FakeState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An injected failure: requests whose method matches and whose path contains `path` (or
/// equals it, when `exact`) get `status` (with a matching `Status` reason) instead of an
/// answer.
#[derive(Debug, Clone)]
struct Fault {
    method: Method,
    path: String,
    exact: bool,
    status: u16,
    remaining: Option<usize>,
}

/// An object store keyed by (API prefix, plural, namespace or ""), then name.
type Store = BTreeMap<(String, String, String), BTreeMap<String, Value>>;

struct FakeState {
    git_version: String,
    store: Store,
    faults: Vec<Fault>,
    requests: Vec<String>,
    /// Issued ServiceAccount tokens: token -> (namespace, name, uid, expiry).
    tokens: HashMap<String, (String, String, String, chrono::DateTime<chrono::Utc>)>,
    /// The longest token the fake grants (real servers cap with
    /// --service-account-max-token-expiration).
    max_token_seconds: i64,
    next_rv: u64,
}

impl FakeKube {
    /// Starts a fake with namespaces `default` and `kube-system` and the built-in
    /// ClusterRoles `cluster-admin`, `admin`, `edit` and `view`.
    pub async fn start() -> Self {
        let mut state = FakeState {
            git_version: "v1.33.2".into(),
            store: Store::new(),
            faults: Vec::new(),
            requests: Vec::new(),
            tokens: HashMap::new(),
            max_token_seconds: 48 * 3600,
            next_rv: 1,
        };
        for ns in ["default", "kube-system"] {
            state.put_new(
                "api/v1",
                "namespaces",
                "",
                json!({"metadata": {"name": ns}}),
            );
        }
        for role in ["cluster-admin", "admin", "edit", "view"] {
            state.put_new(
                "apis/rbac.authorization.k8s.io/v1",
                "clusterroles",
                "",
                json!({"metadata": {"name": role}, "rules": []}),
            );
        }
        let state = Arc::new(Mutex::new(state));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}"),
            state,
            task,
        }
    }

    /// The server URL (`http://127.0.0.1:port`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig for the administrator (context `fake`).
    pub fn admin_kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: admin\n  user:\n    token: {ADMIN_TOKEN}\ncontexts:\n- name: fake\n  \
             context:\n    cluster: fake\n    user: admin\ncurrent-context: fake\n",
            self.url
        )
    }

    /// A kube client for the administrator.
    pub fn admin_client(&self) -> kube::Client {
        let uri: http::Uri = self.url.parse().expect("url");
        let mut config = kube::Config::new(uri);
        config.auth_info.token = Some(ADMIN_TOKEN.to_owned().into());
        kube::Client::try_from(config).expect("client")
    }

    /// What `/version` reports as gitVersion.
    pub fn set_git_version(&self, v: &str) {
        self.lock().git_version = v.into();
    }

    /// The longest token lifetime granted (longer requests are shortened, as real servers do).
    pub fn set_max_token_seconds(&self, seconds: i64) {
        self.lock().max_token_seconds = seconds;
    }

    /// From now on, answer `status` to `method` requests whose path contains `path`.
    pub fn fail(&self, method: Method, path: &str, status: u16) {
        self.lock().faults.push(Fault {
            method,
            path: path.into(),
            exact: false,
            status,
            remaining: None,
        });
    }

    /// Like [`FakeKube::fail`], for the next `times` matching requests only.
    pub fn fail_times(&self, method: Method, path: &str, status: u16, times: usize) {
        self.lock().faults.push(Fault {
            method,
            path: path.into(),
            exact: false,
            status,
            remaining: Some(times),
        });
    }

    /// From now on, answer `status` to `method` requests for exactly this path.
    pub fn fail_path(&self, method: Method, path: &str, status: u16) {
        self.lock().faults.push(Fault {
            method,
            path: path.into(),
            exact: true,
            status,
            remaining: None,
        });
    }

    pub fn clear_failures(&self) {
        self.lock().faults.clear();
    }

    /// Stores an object as if it had been created (for seeding nodes, pods…). `collection`
    /// is an API path such as `api/v1/nodes` or `api/v1/namespaces/default/pods`.
    pub fn insert(&self, collection: &str, object: Value) {
        let target = parse_path(&format!("/{collection}")).expect("a known collection path");
        self.lock()
            .put_new(&target.prefix, &target.plural, &target.namespace, object);
    }

    /// The object at an API path (e.g. `api/v1/namespaces/kqueen-users/serviceaccounts/x`).
    pub fn object(&self, path: &str) -> Option<Value> {
        let target = parse_path(&format!("/{path}"))?;
        let name = target.name.clone()?;
        self.lock()
            .store
            .get(&target.key())
            .and_then(|c| c.get(&name))
            .cloned()
    }

    /// Names of the objects in a collection path (e.g. `apis/rbac.authorization.k8s.io/v1/clusterrolebindings`).
    pub fn names(&self, collection: &str) -> Vec<String> {
        let Some(target) = parse_path(&format!("/{collection}")) else {
            return Vec::new();
        };
        self.lock()
            .store
            .get(&target.key())
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Every request so far, as `METHOD /path`.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    /// How many requests had this method and a path containing `path`.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.starts_with(&format!("{method} ")) && r.contains(path))
            .count()
    }

    fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A server that accepts connections and never answers (for timeout tests); stops when the
/// returned handle is dropped or aborted.
pub async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{addr}"), task)
}

/// A URL where nothing listens (connection refused).
pub async fn refused_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}

/// A parsed API path.
#[derive(Debug, Clone)]
struct Target {
    prefix: String,
    plural: String,
    kind: &'static str,
    namespaced: bool,
    /// "" for cluster-scoped resources and all-namespace lists.
    namespace: String,
    name: Option<String>,
    subresource: Option<String>,
}

impl Target {
    fn key(&self) -> (String, String, String) {
        (
            self.prefix.clone(),
            self.plural.clone(),
            self.namespace.clone(),
        )
    }

    fn api_version(&self) -> String {
        self.prefix
            .strip_prefix("apis/")
            .or_else(|| self.prefix.strip_prefix("api/"))
            .unwrap_or(&self.prefix)
            .to_owned()
    }
}

fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("api/v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("apis/{group}/{version}"), rest),
        _ => return None,
    };
    let find = |plural: &str| {
        RESOURCES
            .iter()
            .find(|(p, r, _, _)| *p == prefix && *r == plural)
            .copied()
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, more @ ..] if find(plural).is_some_and(|r| r.3) => (
            (*ns).to_owned(),
            std::iter::once(*plural)
                .chain(more.iter().copied())
                .collect(),
        ),
        other => (String::new(), other.to_vec()),
    };
    let (plural, name, subresource) = match rest.as_slice() {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some((*name).to_owned()), None),
        [plural, name, sub] => (*plural, Some((*name).to_owned()), Some((*sub).to_owned())),
        _ => return None,
    };
    let (_, _, kind, namespaced) = find(plural)?;
    if namespaced && namespace.is_empty() && name.is_some() {
        return None;
    }
    Some(Target {
        prefix,
        plural: plural.to_owned(),
        kind,
        namespaced,
        namespace,
        name,
        subresource,
    })
}

impl FakeState {
    fn rv(&mut self) -> String {
        self.next_rv += 1;
        self.next_rv.to_string()
    }

    /// Stores a new object, filling in server-set metadata.
    fn put_new(&mut self, prefix: &str, plural: &str, namespace: &str, mut object: Value) -> Value {
        let (_, _, kind, _) = RESOURCES
            .iter()
            .find(|(p, r, _, _)| *p == prefix && *r == plural)
            .copied()
            .expect("known resource");
        let rv = self.rv();
        let api_version = prefix
            .strip_prefix("apis/")
            .or_else(|| prefix.strip_prefix("api/"))
            .unwrap_or(prefix);
        object["apiVersion"] = json!(api_version);
        object["kind"] = json!(kind);
        let meta = &mut object["metadata"];
        if !namespace.is_empty() {
            meta["namespace"] = json!(namespace);
        }
        meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
        meta["resourceVersion"] = json!(rv);
        meta["creationTimestamp"] =
            json!(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
        if kind == "Namespace" {
            object["status"] = json!({"phase": "Active"});
        }
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.store
            .entry((prefix.to_owned(), plural.to_owned(), namespace.to_owned()))
            .or_default()
            .insert(name, object.clone());
        object
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.store
            .get(&("api/v1".to_owned(), "namespaces".to_owned(), String::new()))
            .is_some_and(|c| c.contains_key(ns))
    }

    fn service_account_uid(&self, ns: &str, name: &str) -> Option<String> {
        self.store
            .get(&(
                "api/v1".to_owned(),
                "serviceaccounts".to_owned(),
                ns.to_owned(),
            ))
            .and_then(|c| c.get(name))
            .and_then(|sa| sa["metadata"]["uid"].as_str().map(str::to_owned))
    }
}

enum Caller {
    Admin,
    ServiceAccount,
}

async fn handle(
    State(state): State<Arc<Mutex<FakeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    let path = uri.path().to_owned();
    s.requests.push(format!("{method} {path}"));

    let caller = match authenticate(&s, &headers) {
        Some(c) => c,
        None => return status(401, "Unauthorized", "Unauthorized", None),
    };

    if let Some(i) = s.faults.iter().position(|f| {
        f.method == method && (path == f.path || (!f.exact && path.contains(&f.path)))
    }) {
        let fault = s.faults[i].clone();
        if let Some(n) = fault.remaining {
            if n <= 1 {
                s.faults.remove(i);
            } else {
                s.faults[i].remaining = Some(n - 1);
            }
        }
        return injected(fault.status);
    }

    if path == "/version" && method == Method::GET {
        let (major, minor) = split_version(&s.git_version);
        return ok(
            200,
            json!({
                "major": major, "minor": minor, "gitVersion": s.git_version,
                "gitCommit": "0000000", "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24.0",
                "compiler": "gc", "platform": "linux/amd64"
            }),
        );
    }

    let Some(target) = parse_path(&path) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        );
    };
    if matches!(caller, Caller::ServiceAccount) {
        return status(
            403,
            "Forbidden",
            &format!(
                "{} is forbidden: User \"system:serviceaccount\" cannot {} resource \"{}\"",
                target.plural,
                method.as_str().to_lowercase(),
                target.plural
            ),
            None,
        );
    }
    let query = uri.query().unwrap_or("").to_owned();
    match (&method, &target.name, &target.subresource) {
        (&Method::GET, None, None) => list(&s, &target, &query),
        (&Method::GET, Some(name), None) => get(&s, &target, name),
        (&Method::POST, None, None) => create(&mut s, &target, &body),
        (&Method::PUT, Some(name), None) => replace(&mut s, &target, name, &body),
        (&Method::PATCH, Some(name), None) => patch(&mut s, &target, name, &headers, &body),
        // The status subresource: a merge patch of the object (tests set pod phases, node
        // conditions and controller status this way, as the real kubelet and controllers do).
        (&Method::PATCH, Some(name), Some(sub)) if sub == "status" => {
            patch(&mut s, &target, name, &headers, &body)
        }
        (&Method::DELETE, Some(name), None) => delete(&mut s, &target, name),
        (&Method::POST, Some(name), Some(sub))
            if sub == "token" && target.plural == "serviceaccounts" =>
        {
            token_request(&mut s, &target, name, &body)
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            None,
        ),
    }
}

fn authenticate(s: &FakeState, headers: &HeaderMap) -> Option<Caller> {
    let token = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?;
    if token == ADMIN_TOKEN {
        return Some(Caller::Admin);
    }
    let (ns, name, uid, expires) = s.tokens.get(token)?;
    let alive = s.service_account_uid(ns, name).as_deref() == Some(uid.as_str());
    (alive && *expires > chrono::Utc::now()).then_some(Caller::ServiceAccount)
}

fn list(s: &FakeState, t: &Target, query: &str) -> Response {
    let selector: Vec<(String, String)> = query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("labelSelector="))
        .flat_map(|sel| {
            let decoded = percent_decode(sel);
            decoded
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_start_matches('=').to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    let items: Vec<Value> = s
        .store
        .iter()
        .filter(|((p, r, ns), _)| {
            *p == t.prefix && *r == t.plural && (t.namespace.is_empty() || *ns == t.namespace)
        })
        .flat_map(|(_, objects)| objects.values())
        .filter(|o| {
            selector
                .iter()
                .all(|(k, v)| o["metadata"]["labels"][k].as_str() == Some(v.as_str()))
        })
        .cloned()
        .collect();
    ok(
        200,
        json!({
            "apiVersion": t.api_version(),
            "kind": format!("{}List", t.kind),
            "metadata": {"resourceVersion": s.next_rv.to_string()},
            "items": items,
        }),
    )
}

fn get(s: &FakeState, t: &Target, name: &str) -> Response {
    match s.store.get(&t.key()).and_then(|c| c.get(name)) {
        Some(o) => ok(200, o.clone()),
        None => not_found(t, name),
    }
}

fn create(s: &mut FakeState, t: &Target, body: &[u8]) -> Response {
    let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "the body is not JSON", None);
    };
    if t.namespaced && t.namespace.is_empty() {
        return status(405, "MethodNotAllowed", "create needs a namespace", None);
    }
    if t.namespaced && !s.namespace_exists(&t.namespace) {
        return status(
            404,
            "NotFound",
            &format!("namespaces \"{}\" not found", t.namespace),
            Some(("namespaces", &t.namespace)),
        );
    }
    let name = match object["metadata"]["name"].as_str() {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => match object["metadata"]["generateName"].as_str() {
            Some(g) => format!("{g}{}", &uuid::Uuid::new_v4().simple().to_string()[..5]),
            None => return status(422, "Invalid", "metadata.name: Required value", None),
        },
    };
    if !is_dns_subdomain(&name) && t.kind != "ClusterRoleBinding" && t.kind != "ClusterRole" {
        return status(
            422,
            "Invalid",
            &format!("metadata.name: Invalid value: \"{name}\""),
            None,
        );
    }
    if s.store.get(&t.key()).is_some_and(|c| c.contains_key(&name)) {
        return status(
            409,
            "AlreadyExists",
            &format!("{} \"{name}\" already exists", t.plural),
            Some((&t.plural, &name)),
        );
    }
    object["metadata"]["name"] = json!(name);
    if let Some(m) = object["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    let stored = s.put_new(&t.prefix, &t.plural, &t.namespace, object);
    ok(201, stored)
}

fn replace(s: &mut FakeState, t: &Target, name: &str, body: &[u8]) -> Response {
    let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "the body is not JSON", None);
    };
    let Some(current) = s.store.get(&t.key()).and_then(|c| c.get(name)).cloned() else {
        return not_found(t, name);
    };
    if let Some(rv) = object["metadata"]["resourceVersion"].as_str() {
        if Some(rv) != current["metadata"]["resourceVersion"].as_str() {
            return status(
                409,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified",
                    t.plural
                ),
                Some((&t.plural, name)),
            );
        }
    }
    if t.kind.ends_with("RoleBinding") && object["roleRef"] != current["roleRef"] {
        return status(
            422,
            "Invalid",
            &format!("{}.rbac.authorization.k8s.io \"{name}\" is invalid: roleRef: Invalid value: cannot change roleRef", t.kind),
            Some((&t.plural, name)),
        );
    }
    for keep in ["uid", "creationTimestamp", "namespace", "name"] {
        object["metadata"][keep] = current["metadata"][keep].clone();
    }
    object["apiVersion"] = current["apiVersion"].clone();
    object["kind"] = current["kind"].clone();
    let rv = s.rv();
    object["metadata"]["resourceVersion"] = json!(rv);
    s.store
        .entry(t.key())
        .or_default()
        .insert(name.to_owned(), object.clone());
    ok(200, object)
}

fn patch(s: &mut FakeState, t: &Target, name: &str, headers: &HeaderMap, body: &[u8]) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !matches!(
        content_type,
        "application/merge-patch+json" | "application/strategic-merge-patch+json"
    ) {
        return status(
            415,
            "UnsupportedMediaType",
            "only merge patches are supported by the fake",
            None,
        );
    }
    let Ok(patch) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "the body is not JSON", None);
    };
    let Some(mut object) = s.store.get(&t.key()).and_then(|c| c.get(name)).cloned() else {
        return not_found(t, name);
    };
    merge(&mut object, &patch);
    let rv = s.rv();
    object["metadata"]["resourceVersion"] = json!(rv);
    s.store
        .entry(t.key())
        .or_default()
        .insert(name.to_owned(), object.clone());
    ok(200, object)
}

fn delete(s: &mut FakeState, t: &Target, name: &str) -> Response {
    let Some(object) = s.store.get_mut(&t.key()).and_then(|c| c.remove(name)) else {
        return not_found(t, name);
    };
    if t.kind == "Namespace" {
        s.store.retain(|(_, _, ns), _| ns != name);
    }
    ok(200, object)
}

fn token_request(s: &mut FakeState, t: &Target, name: &str, body: &[u8]) -> Response {
    let Some(uid) = s.service_account_uid(&t.namespace, name) else {
        return not_found(t, name);
    };
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "the body is not JSON", None);
    };
    let asked = request["spec"]["expirationSeconds"]
        .as_i64()
        .unwrap_or(3600);
    if asked < 600 {
        return status(
            422,
            "Invalid",
            "spec.expirationSeconds: Invalid value: may not specify a duration less than 10 minutes",
            None,
        );
    }
    let seconds = asked.min(s.max_token_seconds);
    let expires = chrono::Utc::now() + chrono::Duration::seconds(seconds);
    let token = format!("fake-sa-token-{}", uuid::Uuid::new_v4().simple());
    s.tokens.insert(
        token.clone(),
        (t.namespace.clone(), name.to_owned(), uid, expires),
    );
    let mut answer = request;
    answer["apiVersion"] = json!("authentication.k8s.io/v1");
    answer["kind"] = json!("TokenRequest");
    answer["metadata"]["name"] = json!(name);
    answer["metadata"]["namespace"] = json!(t.namespace);
    answer["spec"]["expirationSeconds"] = json!(seconds);
    answer["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    ok(201, answer)
}

/// JSON merge patch (RFC 7386).
fn merge(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (k, v) in fields {
        if v.is_null() {
            if let Some(map) = target.as_object_mut() {
                map.remove(k);
            }
        } else {
            merge(&mut target[k], v);
        }
    }
}

fn ok(code: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::OK),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A `Status` error like the real server's.
fn status(code: u16, reason: &str, message: &str, details: Option<(&str, &str)>) -> Response {
    let mut body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    if let Some((kind, name)) = details {
        body["details"] = json!({"name": name, "kind": kind});
    }
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn not_found(t: &Target, name: &str) -> Response {
    status(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", t.plural),
        Some((&t.plural, name)),
    )
}

fn injected(code: u16) -> Response {
    let (reason, message) = match code {
        401 => ("Unauthorized", "Unauthorized"),
        403 => ("Forbidden", "forbidden by the fake (injected)"),
        404 => (
            "NotFound",
            "the server could not find the requested resource",
        ),
        409 => ("Conflict", "conflict (injected)"),
        429 => ("TooManyRequests", "too many requests (injected)"),
        500 => ("InternalError", "internal error (injected)"),
        503 => ("ServiceUnavailable", "unavailable (injected)"),
        _ => ("", "injected failure"),
    };
    status(code, reason, message, None)
}

fn split_version(v: &str) -> (String, String) {
    let mut parts = v.trim_start_matches('v').split('.');
    let major = parts.next().unwrap_or("1").to_owned();
    let minor = parts.next().unwrap_or("0").to_owned();
    (major, minor)
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
