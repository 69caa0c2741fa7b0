//! What Cluster API says about a cluster, read from the `Cluster` object in either API
//! version: its phase, its conditions (v1beta1's own, or v1beta2's metav1 conditions, also
//! found under `status.v1beta2` of v1beta1 objects since Cluster API 1.9), the failure it
//! reports, and the milestones KQueen follows; and how far its Machines are.

use std::collections::BTreeMap;

use serde_json::Value;

/// One condition, as shown in the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Condition {
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Condition {
    fn is_true(&self) -> bool {
        self.status == "True"
    }

    /// "ControlPlaneInitialized is False (WaitingForControlPlane): Waiting for …".
    pub(super) fn describe(&self) -> String {
        let mut line = format!("{} is {}", self.kind, self.status);
        if !self.reason.is_empty() {
            line.push_str(&format!(" ({})", self.reason));
        }
        if !self.message.is_empty() {
            line.push_str(&format!(": {}", one_line(&self.message)));
        }
        line
    }

    /// What the timeline remembers to tell changes apart.
    pub(super) fn fingerprint(&self) -> String {
        format!("{}|{}|{}", self.status, self.reason, self.message)
    }
}

fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(300).collect()
}

/// The milestones of a cluster coming up, as Cluster API reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Observed {
    pub phase: Option<String>,
    pub conditions: Vec<Condition>,
    pub failure: Option<String>,
    pub infrastructure_ready: bool,
    pub control_plane_initialized: bool,
    pub control_plane_available: bool,
    pub deleting: bool,
}

fn conditions_at(object: &Value, pointer: &str) -> Vec<Condition> {
    let field = |c: &Value, name: &str| {
        c.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| Condition {
                    kind: field(c, "type"),
                    status: field(c, "status"),
                    reason: field(c, "reason"),
                    message: field(c, "message"),
                })
                .filter(|c| !c.kind.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn flag(object: &Value, pointer: &str) -> bool {
    object.pointer(pointer).and_then(Value::as_bool) == Some(true)
}

/// Reads a Cluster object of either version.
pub(super) fn observe(object: &Value) -> Observed {
    // v1beta2's conditions: the object's own in v1beta2, under status.v1beta2 in v1beta1.
    let v1beta2 = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.ends_with("/v1beta2"));
    let (mut conditions, legacy) = if v1beta2 {
        (conditions_at(object, "/status/conditions"), Vec::new())
    } else {
        let newer = conditions_at(object, "/status/v1beta2/conditions");
        let own = conditions_at(object, "/status/conditions");
        if newer.is_empty() {
            (own, Vec::new())
        } else {
            (newer, own)
        }
    };
    let is = |list: &[Condition], kind: &str| list.iter().any(|c| c.kind == kind && c.is_true());
    let any = |kinds: &[&str]| kinds.iter().any(|k| is(&conditions, k) || is(&legacy, k));
    let infrastructure_ready = any(&["InfrastructureReady"])
        || flag(object, "/status/infrastructureReady")
        || flag(object, "/status/initialization/infrastructureProvisioned");
    let control_plane_initialized = any(&["ControlPlaneInitialized"])
        || flag(object, "/status/initialization/controlPlaneInitialized");
    let control_plane_available = any(&["ControlPlaneAvailable", "ControlPlaneReady"])
        || flag(object, "/status/controlPlaneReady");
    let failure = [
        "/status/failureMessage",
        "/status/deprecated/v1beta1/failureMessage",
    ]
    .iter()
    .find_map(|p| object.pointer(p).and_then(Value::as_str))
    .filter(|m| !m.trim().is_empty())
    .map(one_line);
    let phase = object
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let failure = failure.or_else(|| {
        (phase.as_deref() == Some("Failed"))
            .then(|| "Cluster API set the phase to Failed without a message".to_owned())
    });
    conditions.sort_by(|a, b| a.kind.cmp(&b.kind));
    Observed {
        deleting: object.pointer("/metadata/deletionTimestamp").is_some(),
        phase,
        conditions,
        failure,
        infrastructure_ready,
        control_plane_initialized,
        control_plane_available: control_plane_available && control_plane_initialized,
    }
}

impl Observed {
    /// The milestone it waits for, with the message of the condition that holds it, and how
    /// far along creation is (percent).
    pub(super) fn waiting_for(&self) -> (String, u8) {
        let (what, kinds, percent): (&str, &[&str], u8) = if !self.infrastructure_ready {
            (
                "Provisioning the infrastructure",
                &["InfrastructureReady"],
                20,
            )
        } else if !self.control_plane_initialized {
            (
                "Initializing the control plane",
                &["ControlPlaneInitialized"],
                40,
            )
        } else if !self.control_plane_available {
            (
                "Waiting for the control plane to be available",
                &["ControlPlaneAvailable", "ControlPlaneReady"],
                60,
            )
        } else {
            return ("Control plane available".into(), 80);
        };
        let held_by = self
            .conditions
            .iter()
            .find(|c| kinds.contains(&c.kind.as_str()) && !c.is_true())
            .filter(|c| !c.message.is_empty() || !c.reason.is_empty());
        match held_by {
            Some(c) => (format!("{what}: {}", c.describe()), percent),
            None => (what.to_owned(), percent),
        }
    }

    /// The conditions that differ from `seen` (by type), to log, and the new fingerprints.
    pub(super) fn changes(
        &self,
        seen: &BTreeMap<String, String>,
    ) -> (Vec<String>, BTreeMap<String, String>) {
        let mut lines = Vec::new();
        let mut now = BTreeMap::new();
        for c in &self.conditions {
            let print = c.fingerprint();
            if seen.get(&c.kind) != Some(&print) {
                lines.push(format!("Condition {}", c.describe()));
            }
            now.insert(c.kind.clone(), print);
        }
        if let Some(phase) = &self.phase {
            let print = phase.clone();
            if seen.get("@phase") != Some(&print) {
                lines.push(format!("Phase {phase}"));
            }
            now.insert("@phase".into(), print);
        }
        (lines, now)
    }
}

/// How far a cluster's Machines are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Machines {
    pub total: u32,
    pub running: u32,
    pub workers: u32,
    pub workers_running: u32,
    /// Control plane machines (not being deleted).
    pub control_plane: u32,
    /// Running at the version asked about.
    pub running_at_version: u32,
}

/// Counts Machine objects (as JSON) of a cluster; `version` is the one an upgrade waits for.
pub(super) fn count_machines(machines: &[Value], version: Option<&str>) -> Machines {
    let mut m = Machines::default();
    for machine in machines {
        if machine.pointer("/metadata/deletionTimestamp").is_some() {
            // Going away: counted as neither desired nor ready.
            m.total += 1;
            continue;
        }
        let running = machine.pointer("/status/phase").and_then(Value::as_str) == Some("Running");
        let worker = machine
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_none_or(|l| !l.contains_key("cluster.x-k8s.io/control-plane"));
        m.total += 1;
        if running {
            m.running += 1;
            let at = machine.pointer("/spec/version").and_then(Value::as_str);
            if version.is_some() && at == version {
                m.running_at_version += 1;
            }
        }
        if !worker {
            m.control_plane += 1;
        }
        if worker {
            m.workers += 1;
            if running {
                m.workers_running += 1;
            }
        }
    }
    m
}

/// What Cluster API counted of a part of the cluster (`controlPlane`, `workers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub desired: u32,
    pub replicas: u32,
    pub ready: u32,
    pub up_to_date: u32,
}

/// Cluster API's own counts of a part (v1beta2 status, also under `status.v1beta2` of
/// v1beta1 objects since 1.9), only once it has looked at the current spec: right after a
/// change, the counts still describe the old one.
pub(super) fn counted(object: &Value, part: &str) -> Option<Counts> {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_u64)?;
    let observed = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_u64)?;
    if observed < generation {
        return None;
    }
    let at = [format!("/status/{part}"), format!("/status/v1beta2/{part}")]
        .iter()
        .find_map(|p| {
            object
                .pointer(p)
                .filter(|v| v.get("desiredReplicas").is_some())
        })?;
    let n = |k: &str| at.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
    Some(Counts {
        desired: n("desiredReplicas"),
        replicas: n("replicas"),
        ready: n("readyReplicas"),
        up_to_date: n("upToDateReplicas"),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1beta1_milestones_come_from_conditions_and_flags() {
        let o = observe(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "status": {
                "phase": "Provisioned",
                "infrastructureReady": true,
                "conditions": [
                    {"type": "ControlPlaneInitialized", "status": "True"},
                    {"type": "ControlPlaneReady", "status": "False", "reason": "ScalingUp",
                     "message": "1 of 3 replicas"},
                ],
            }
        }));
        assert!(o.infrastructure_ready && o.control_plane_initialized);
        assert!(!o.control_plane_available);
        let (step, percent) = o.waiting_for();
        assert_eq!(
            step,
            "Waiting for the control plane to be available: ControlPlaneReady is False (ScalingUp): 1 of 3 replicas"
        );
        assert_eq!(percent, 60);
    }

    #[test]
    fn v1beta2_and_its_failure() {
        let o = observe(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "status": {
                "phase": "Failed",
                "initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
                "conditions": [{"type": "ControlPlaneAvailable", "status": "True", "reason": "Available"}],
                "deprecated": {"v1beta1": {"failureMessage": "quota exceeded\n in eu-west-1"}},
            }
        }));
        assert!(o.control_plane_available);
        assert_eq!(o.failure.as_deref(), Some("quota exceeded in eu-west-1"));
        assert_eq!(o.waiting_for().0, "Control plane available");
    }

    #[test]
    fn newer_conditions_of_v1beta1_objects_are_preferred() {
        let o = observe(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "status": {
                "conditions": [{"type": "Ready", "status": "False"}],
                "v1beta2": {"conditions": [
                    {"type": "InfrastructureReady", "status": "True", "reason": "Ready"},
                    {"type": "ControlPlaneInitialized", "status": "True", "reason": "Initialized"},
                    {"type": "ControlPlaneAvailable", "status": "True", "reason": "Available"},
                ]},
            }
        }));
        assert!(o.control_plane_available);
        assert!(o.conditions.iter().all(|c| c.kind != "Ready"));
    }

    #[test]
    fn only_changes_are_logged() {
        let mut o = observe(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "status": {"phase": "Provisioning", "conditions": [
                {"type": "InfrastructureReady", "status": "False", "reason": "Waiting", "message": "VPC"},
            ]}
        }));
        let (lines, seen) = o.changes(&BTreeMap::new());
        assert_eq!(
            lines,
            [
                "Condition InfrastructureReady is False (Waiting): VPC",
                "Phase Provisioning"
            ]
        );
        assert!(o.changes(&seen).0.is_empty());
        o.conditions[0].status = "True".into();
        assert_eq!(o.changes(&seen).0.len(), 1);
    }

    #[test]
    fn counts_are_read_only_once_the_spec_was_seen() {
        let mut o = json!({
            "metadata": {"generation": 3},
            "status": {"observedGeneration": 2, "workers": {
                "desiredReplicas": 2, "replicas": 2, "readyReplicas": 2, "upToDateReplicas": 1}},
        });
        assert_eq!(counted(&o, "workers"), None);
        o["status"]["observedGeneration"] = json!(3);
        assert_eq!(
            counted(&o, "workers"),
            Some(Counts {
                desired: 2,
                replicas: 2,
                ready: 2,
                up_to_date: 1
            })
        );
        assert_eq!(counted(&o, "controlPlane"), None);
    }

    #[test]
    fn machines_are_counted_by_role_phase_and_version() {
        let m = |cp: bool, phase: &str, version: &str| {
            let mut labels = json!({"cluster.x-k8s.io/cluster-name": "c"});
            if cp {
                labels["cluster.x-k8s.io/control-plane"] = json!("");
            }
            json!({"metadata": {"labels": labels}, "spec": {"version": version},
                   "status": {"phase": phase}})
        };
        let list = [
            m(true, "Running", "v1.31.0"),
            m(false, "Running", "v1.30.0"),
            m(false, "Pending", "v1.31.0"),
        ];
        let c = count_machines(&list, Some("v1.31.0"));
        assert_eq!(
            c,
            Machines {
                total: 3,
                running: 2,
                workers: 2,
                workers_running: 1,
                control_plane: 1,
                running_at_version: 1
            }
        );
    }
}
