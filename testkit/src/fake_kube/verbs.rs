//! The verbs on the in-memory objects: list, get, create, replace, patch, delete, TokenRequest.

use axum::http::{header, HeaderMap};
use axum::response::Response;
use serde_json::{json, Value};

use crate::fake_kube::{
    is_dns_subdomain, not_found, ok, percent_decode, status, FakeState, Target,
};

pub(super) fn list(s: &FakeState, t: &Target, query: &str) -> Response {
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

pub(super) fn get(s: &FakeState, t: &Target, name: &str) -> Response {
    match s.store.get(&t.key()).and_then(|c| c.get(name)) {
        Some(o) => ok(200, o.clone()),
        None => not_found(t, name),
    }
}

pub(super) fn create(s: &mut FakeState, t: &Target, body: &[u8]) -> Response {
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

pub(super) fn replace(s: &mut FakeState, t: &Target, name: &str, body: &[u8]) -> Response {
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
    store_new_version(s, t, name, object)
}

pub(super) fn patch(
    s: &mut FakeState,
    t: &Target,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
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
    store_new_version(s, t, name, object)
}

pub(super) fn delete(s: &mut FakeState, t: &Target, name: &str) -> Response {
    let Some(object) = s.store.get_mut(&t.key()).and_then(|c| c.remove(name)) else {
        return not_found(t, name);
    };
    if t.kind == "Namespace" {
        s.store.retain(|(_, _, ns), _| ns != name);
    }
    ok(200, object)
}

pub(super) fn token_request(s: &mut FakeState, t: &Target, name: &str, body: &[u8]) -> Response {
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
pub(super) fn merge(target: &mut Value, patch: &Value) {
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

/// Stores `object` as the new version of `name` (a fresh resourceVersion) and answers it.
fn store_new_version(s: &mut FakeState, t: &Target, name: &str, mut object: Value) -> Response {
    let rv = s.rv();
    object["metadata"]["resourceVersion"] = json!(rv);
    s.store
        .entry(t.key())
        .or_default()
        .insert(name.to_owned(), object.clone());
    ok(200, object)
}
