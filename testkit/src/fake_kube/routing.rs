//! Which object a request names, who asks, and the dispatch to the verbs.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{json, Value};

use super::replace;
use crate::fake_kube::{
    create, delete, get, injected, list, ok, patch, split_version, status, token_request,
    FakeState, ADMIN_TOKEN, RESOURCES,
};

/// A parsed API path.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) prefix: String,
    pub(super) plural: String,
    pub(super) kind: &'static str,
    pub(super) namespaced: bool,
    /// "" for cluster-scoped resources and all-namespace lists.
    pub(super) namespace: String,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
}

impl Target {
    pub(super) fn key(&self) -> (String, String, String) {
        (
            self.prefix.clone(),
            self.plural.clone(),
            self.namespace.clone(),
        )
    }

    pub(super) fn api_version(&self) -> String {
        self.prefix
            .strip_prefix("apis/")
            .or_else(|| self.prefix.strip_prefix("api/"))
            .unwrap_or(&self.prefix)
            .to_owned()
    }
}

pub(super) fn parse_path(path: &str) -> Option<Target> {
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
    pub(super) fn rv(&mut self) -> String {
        self.next_rv += 1;
        self.next_rv.to_string()
    }

    /// Stores a new object, filling in server-set metadata.
    pub(super) fn put_new(
        &mut self,
        prefix: &str,
        plural: &str,
        namespace: &str,
        mut object: Value,
    ) -> Value {
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

    pub(super) fn namespace_exists(&self, ns: &str) -> bool {
        self.store
            .get(&("api/v1".to_owned(), "namespaces".to_owned(), String::new()))
            .is_some_and(|c| c.contains_key(ns))
    }

    pub(super) fn service_account_uid(&self, ns: &str, name: &str) -> Option<String> {
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

pub(super) enum Caller {
    Admin,
    ServiceAccount,
}

pub(super) async fn handle(
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

pub(super) fn authenticate(s: &FakeState, headers: &HeaderMap) -> Option<Caller> {
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
