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

use axum::http::Method;
use axum::Router;
use serde_json::{json, Value};

mod answers;
mod routing;
mod verbs;

use answers::*;
use routing::*;
use verbs::*;

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
