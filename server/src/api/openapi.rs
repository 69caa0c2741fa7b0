//! The answers every operation can give besides its own, added to the OpenAPI document in one
//! place so that the document names each status the middlewares and extractors answer:
//!
//! - 401: every operation but the open login routes, without a session or a valid token
//!   (`require_identity`);
//! - 403: every write, with a session cookie from another origin (`csrf::same_origin`);
//! - 400, 413, 415: every operation with a body (`ApiJson`: malformed JSON, over the limit,
//!   not JSON); 400 also every operation with query parameters (`ApiQuery`);
//! - 404: every operation with a path parameter (nothing by that name or id).
//!
//! All in the API's error shape, `ErrorOut`.

use serde_json::{json, Map, Value};

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The document as served: utoipa's, plus the shared answers and the name rule's pattern.
pub fn finish(doc: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).unwrap_or_default();
    state_the_name_rule(&mut doc);
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut() {
            for method in METHODS {
                if let Some(op) = item.get_mut(method).and_then(Value::as_object_mut) {
                    add_shared_answers(method, op);
                }
            }
        }
    }
    doc
}

/// Every string schema of format `dns-label` gets [`super::dto::DNS_LABEL`] as its pattern
/// instead (tools that generate requests from the document know patterns, not this format).
fn state_the_name_rule(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str) == Some(super::dto::DNS_LABEL_FORMAT) {
                map.remove("format");
                map.insert("pattern".into(), json!(super::dto::DNS_LABEL));
            }
            map.values_mut().for_each(state_the_name_rule);
        }
        Value::Array(items) => items.iter_mut().for_each(state_the_name_rule),
        _ => {}
    }
}

/// `doc` with the provider bodies of the kinds this installation has, per kind
/// ([`super::provider_schemas`]) in place of utoipa's "settings: a map of values".
pub fn with_provider_kinds(doc: &Value, registry: &kqueen_core::provisioner::Registry) -> Value {
    let mut doc = doc.clone();
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.extend(super::provider_schemas::components(registry));
    }
    doc
}

fn add_shared_answers(method: &str, op: &mut Map<String, Value>) {
    let params: Vec<String> = op
        .get("parameters")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("in").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let has_body = op.contains_key("requestBody");
    // `security: [{}]`: open to all (the login routes), no "not logged in" answer.
    let open = op.get("security") == Some(&json!([{}]));
    let mut add = Vec::new();
    if !open {
        add.push((401, "Not logged in: no session and no valid token"));
    }
    if method != "get" {
        add.push((
            403,
            "Forbidden (also: a session cookie sent from another origin)",
        ));
    }
    if has_body {
        add.push((400, "Invalid input; the message names the field"));
        add.push((413, "The body is larger than 2 MiB"));
        add.push((415, "The body is not sent as application/json"));
    }
    if params.iter().any(|p| p == "query") {
        add.push((400, "Invalid input; the message names the field"));
    }
    if params.iter().any(|p| p == "path") {
        add.push((404, "Not found"));
    }
    let responses = op
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(responses) = responses else { return };
    for (status, description) in add {
        responses
            .entry(status.to_string())
            .or_insert_with(|| error_answer(description));
    }
    // Answers utoipa wrote without a description (OpenAPI requires one).
    for answer in responses.values_mut() {
        if let Some(a) = answer.as_object_mut() {
            a.entry("description").or_insert_with(|| json!(""));
        }
    }
}

fn error_answer(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
    })
}
