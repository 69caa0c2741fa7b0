//! A Cluster's status as the fake writes it: the conditions of one Cluster API version
//! (v1beta1: with severity; v1beta2: metav1.Condition) plus other status fields, sent as
//! one merge patch of the status subresource.

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Map, Value};

/// The status the fake is about to write for one Cluster.
pub(super) struct Status {
    v2: bool,
    generation: i64,
    conditions: Vec<Value>,
    fields: Map<String, Value>,
}

impl Status {
    /// Starts from the Cluster's current conditions (so transition times are kept).
    pub(super) fn of(cluster: &DynamicObject, v2: bool) -> Self {
        let conditions = cluster.data["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut fields = Map::new();
        let generation = cluster.metadata.generation.unwrap_or(0);
        fields.insert("observedGeneration".into(), json!(generation));
        Self {
            v2,
            generation,
            conditions,
            fields,
        }
    }

    pub(super) fn v2(&self) -> bool {
        self.v2
    }

    /// Whether condition `kind` is currently True.
    pub(super) fn is_true(&self, kind: &str) -> bool {
        self.conditions
            .iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    }

    /// Sets condition `kind`; the transition time changes only when the status flips.
    /// v1beta1 drops reason and message of a True condition (as upstream does) and marks
    /// False ones with severity Info.
    pub(super) fn set(&mut self, kind: &str, ok: bool, reason: &str, message: &str) {
        self.set_with(kind, ok, reason, message, "Info");
    }

    /// [`Status::set`] with severity Warning for a False condition (v1beta1).
    pub(super) fn set_warning(&mut self, kind: &str, ok: bool, reason: &str, message: &str) {
        self.set_with(kind, ok, reason, message, "Warning");
    }

    fn set_with(&mut self, kind: &str, ok: bool, reason: &str, message: &str, severity: &str) {
        let status = if ok { "True" } else { "False" };
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let existing = self.conditions.iter().position(|c| c["type"] == kind);
        let since = existing
            .map(|i| &self.conditions[i])
            .filter(|c| c["status"] == status)
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map(str::to_owned)
            .unwrap_or(now);
        let condition = if self.v2 {
            json!({
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": since,
                "observedGeneration": self.generation,
            })
        } else if ok {
            json!({"type": kind, "status": status, "lastTransitionTime": since})
        } else {
            json!({
                "type": kind,
                "status": status,
                "severity": severity,
                "reason": reason,
                "message": message,
                "lastTransitionTime": since,
            })
        };
        match existing {
            Some(i) => self.conditions[i] = condition,
            None => self.conditions.push(condition),
        }
    }

    /// Sets `status.<path>` (nested objects are merged, not replaced).
    pub(super) fn put(&mut self, path: &[&str], value: Value) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut map = &mut self.fields;
        for key in parents {
            let entry = map.entry(*key).or_insert_with(|| json!({}));
            if !entry.is_object() {
                *entry = json!({});
            }
            let Value::Object(inner) = entry else {
                return;
            };
            map = inner;
        }
        map.insert((*last).to_owned(), value);
    }

    /// The merge patch for the status subresource.
    fn patch(mut self) -> Value {
        if self.v2 {
            // Every condition was looked at for this generation.
            for condition in &mut self.conditions {
                condition["observedGeneration"] = json!(self.generation);
            }
        }
        self.fields
            .insert("conditions".into(), Value::Array(self.conditions));
        json!({ "status": self.fields })
    }

    /// Writes the status of `cluster` (a merge patch of the status subresource).
    pub(super) async fn write(
        self,
        api: &Api<DynamicObject>,
        cluster: &DynamicObject,
    ) -> Result<(), String> {
        let patch = self.patch();
        api.patch_status(
            &cluster.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("write status: {e}"))
    }
}
