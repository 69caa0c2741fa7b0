//! A readable difference between a live object and what a dry run says it would become:
//! the changed fields with their old and new values, leaving out what the server keeps for
//! itself (status, resource versions, managed fields).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many fields are listed per object; the rest are counted.
pub const MAX_FIELDS: usize = 50;
/// Values longer than this are cut.
const MAX_VALUE: usize = 120;

/// One changed field: its path (`spec.replicas`, `spec.template.spec.containers[0].image`)
/// and its values before and after (None: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// The fields that differ between `live` and `after`.
pub fn diff_objects(live: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk("", &strip(live), &strip(after), &mut out);
    if out.len() > MAX_FIELDS {
        let more = out.len() - MAX_FIELDS;
        out.truncate(MAX_FIELDS);
        out.push(FieldChange {
            path: format!("… and {more} more fields"),
            before: None,
            after: None,
        });
    }
    out
}

/// The object without what the server owns.
fn strip(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "managedFields",
                "resourceVersion",
                "generation",
                "uid",
                "creationTimestamp",
                "selfLink",
            ] {
                meta.remove(k);
            }
            // The server's record of the last kubectl apply is not part of the object.
            if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                a.remove("kubectl.kubernetes.io/last-applied-configuration");
                a.remove("deployment.kubernetes.io/revision");
            }
        }
    }
    v
}

fn walk(path: &str, before: &Value, after: &Value, out: &mut Vec<FieldChange>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => walk(&p, x, y, out),
                    (x, y) => out.push(change(p, x, y)),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (x, y) => out.push(change(path.to_owned(), Some(x), Some(y))),
    }
}

fn change(path: String, before: Option<&Value>, after: Option<&Value>) -> FieldChange {
    FieldChange {
        path,
        before: before.map(show),
        after: after.map(show),
    }
}

fn show(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() > MAX_VALUE {
        let mut cut: String = text.chars().take(MAX_VALUE).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_fields_are_listed_with_both_values() {
        let live = json!({"metadata": {"name": "web", "resourceVersion": "1", "labels": {"a": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"image": "nginx:1.25"}]}}},
            "status": {"readyReplicas": 1}});
        let after = json!({"metadata": {"name": "web", "resourceVersion": "2", "labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "nginx:1.27"}]}}},
            "status": {"readyReplicas": 0}});
        let d = diff_objects(&live, &after);
        let paths: Vec<&str> = d.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels.b",
                "spec.replicas",
                "spec.template.spec.containers[0].image"
            ]
        );
        assert_eq!(d[0].before, None);
        assert_eq!(d[0].after.as_deref(), Some("2"));
        assert_eq!(d[1].before.as_deref(), Some("1"));
        assert_eq!(d[2].after.as_deref(), Some("nginx:1.27"));
    }

    #[test]
    fn server_owned_fields_make_no_difference() {
        let live = json!({"metadata": {"name": "a", "generation": 1, "managedFields": [1]}, "status": {"x": 1}});
        let after = json!({"metadata": {"name": "a", "generation": 2, "managedFields": [2]}, "status": {"x": 2}});
        assert!(diff_objects(&live, &after).is_empty());
    }

    #[test]
    fn long_lists_are_cut() {
        let live = json!({"data": (0..80).map(|i| (format!("k{i:02}"), json!("a"))).collect::<serde_json::Map<_, _>>()});
        let after = json!({"data": (0..80).map(|i| (format!("k{i:02}"), json!("b"))).collect::<serde_json::Map<_, _>>()});
        let d = diff_objects(&live, &after);
        assert_eq!(d.len(), MAX_FIELDS + 1);
        assert_eq!(d[MAX_FIELDS].path, "… and 30 more fields");
    }
}
