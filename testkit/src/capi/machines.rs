//! The Machines of one Cluster, kept in line with its `spec.topology` one action at a time:
//! remove a surplus Machine (one marked for deletion first, see [`victim`]), start a Pending
//! one, create a missing one, or replace one at an old version — so a test (or a person in
//! the browser) sees every step.

use std::collections::BTreeMap;

use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use super::{
    CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, DELETE_MACHINE_ANNOTATION, DEPLOYMENT_NAME_LABEL,
    TOPOLOGY_DEPLOYMENT_LABEL,
};

/// What the topology asks for: the control plane (`deployment: None`) and each
/// machineDeployment (MachinePools are [`super::pools`]'s).
struct Group {
    deployment: Option<String>,
    desired: i64,
}

/// How far one group of Machines is.
#[derive(Default, Debug)]
pub(super) struct Count {
    pub desired: i64,
    pub replicas: i64,
    pub running: i64,
    pub up_to_date: i64,
    /// Running at the topology's version (counted up to `desired`).
    pub ready: i64,
}

impl Count {
    pub fn add(&mut self, other: &Count) {
        self.desired += other.desired;
        self.replicas += other.replicas;
        self.running += other.running;
        self.up_to_date += other.up_to_date;
        self.ready += other.ready;
    }

    /// Every desired Machine exists, runs and is up to date; nothing more.
    pub fn done(&self) -> bool {
        self.replicas == self.desired
            && self.running == self.desired
            && self.up_to_date == self.desired
    }

    /// v1beta2's `status.controlPlane` / `status.workers`.
    pub fn to_json(&self) -> Value {
        json!({
            "desiredReplicas": self.desired,
            "replicas": self.replicas,
            "readyReplicas": self.running,
            "availableReplicas": self.running,
            "upToDateReplicas": self.up_to_date,
        })
    }
}

/// The Machines of one Cluster, grouped as its topology wants them.
pub(super) struct Fleet {
    api_version: String,
    cluster: String,
    namespace: String,
    version: String,
    groups: Vec<(Group, Vec<DynamicObject>)>,
    orphans: Vec<DynamicObject>,
}

impl Fleet {
    pub(super) async fn read(
        api: &Api<DynamicObject>,
        api_version: &str,
        cluster: &DynamicObject,
    ) -> Result<Self, String> {
        let name = cluster.name_any();
        let topology = &cluster.data["spec"]["topology"];
        let replicas = |v: &Value| v["replicas"].as_i64().unwrap_or(1).max(0);
        let mut groups = vec![(
            Group {
                deployment: None,
                // No controlPlane in the topology: a managed one, without Machines.
                desired: if topology["controlPlane"].is_object() {
                    replicas(&topology["controlPlane"])
                } else {
                    0
                },
            },
            Vec::new(),
        )];
        for md in topology["workers"]["machineDeployments"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(md_name) = md["name"].as_str() {
                let group = Group {
                    deployment: Some(md_name.to_owned()),
                    desired: replicas(md),
                };
                groups.push((group, Vec::new()));
            }
        }
        let mut orphans = Vec::new();
        for machine in list(api, &name).await? {
            let labels = machine.labels();
            let deployment = if labels.contains_key(CONTROL_PLANE_LABEL) {
                None
            } else {
                labels.get(TOPOLOGY_DEPLOYMENT_LABEL).cloned()
            };
            match groups.iter_mut().find(|(g, _)| g.deployment == deployment) {
                Some((_, machines)) => machines.push(machine),
                None => orphans.push(machine),
            }
        }
        Ok(Self {
            api_version: api_version.to_owned(),
            namespace: cluster.namespace().unwrap_or_default(),
            cluster: name,
            version: topology["version"].as_str().unwrap_or_default().to_owned(),
            groups,
            orphans,
        })
    }

    /// (control plane, workers, orphans)
    pub(super) fn counts(&self) -> (Count, Count, usize) {
        let mut control_plane = Count::default();
        let mut workers = Count::default();
        for (group, machines) in &self.groups {
            let started = machines.iter().filter(|m| running(m)).count() as i64;
            let up_to_date = machines
                .iter()
                .filter(|m| version(m) == self.version)
                .count() as i64;
            let ready = machines
                .iter()
                .filter(|m| running(m) && version(m) == self.version)
                .count() as i64;
            let count = Count {
                desired: group.desired,
                replicas: machines.len() as i64,
                running: started,
                up_to_date,
                ready: ready.min(group.desired),
            };
            match group.deployment {
                None => control_plane.add(&count),
                Some(_) => workers.add(&count),
            }
        }
        (control_plane, workers, self.orphans.len())
    }

    /// Whether some Machine runs an older version than the topology's.
    pub(super) fn rolling(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|(_, ms)| ms)
            .any(|m| version(m) != self.version)
    }

    /// Takes one step towards the topology; `false` when there was nothing to do.
    pub(super) async fn step(&self, api: &Api<DynamicObject>) -> Result<bool, String> {
        if let Some(machine) = self.orphans.first() {
            return delete(api, machine).await.map(|_| true);
        }
        for (group, machines) in &self.groups {
            if machines.len() as i64 > group.desired {
                if let Some(machine) = victim(machines, &self.version) {
                    return delete(api, machine).await.map(|_| true);
                }
            }
        }
        let all = || self.groups.iter().flat_map(|(_, ms)| ms);
        if let Some(machine) = all().find(|m| !running(m)) {
            let name = machine.name_any();
            let status = json!({"status": {
                "phase": "Running",
                "bootstrapReady": true,
                "infrastructureReady": true,
                "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": name},
            }});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(|e| format!("start Machine {name}: {e}"))?;
            return Ok(true);
        }
        for (group, machines) in &self.groups {
            if (machines.len() as i64) < group.desired {
                return self.create(api, group).await.map(|_| true);
            }
        }
        if let Some(machine) = all().find(|m| version(m) != self.version) {
            return delete(api, machine).await.map(|_| true);
        }
        Ok(false)
    }

    async fn create(&self, api: &Api<DynamicObject>, group: &Group) -> Result<(), String> {
        let mut labels = BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), self.cluster.clone())]);
        let role = match &group.deployment {
            None => {
                labels.insert(CONTROL_PLANE_LABEL.to_owned(), String::new());
                "control-plane"
            }
            Some(md) => {
                labels.insert(
                    DEPLOYMENT_NAME_LABEL.to_owned(),
                    format!("{}-{md}", self.cluster),
                );
                labels.insert(TOPOLOGY_DEPLOYMENT_LABEL.to_owned(), md.clone());
                md.as_str()
            }
        };
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{}-{role}-{}", self.cluster, &suffix[..5]);
        let object = json!({
            "apiVersion": self.api_version,
            "kind": "Machine",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
            "spec": {
                "clusterName": self.cluster,
                "version": self.version,
                "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
            },
        });
        let object: DynamicObject =
            serde_json::from_value(object).map_err(|e| format!("Machine {name}: {e}"))?;
        api.create(&PostParams::default(), &object)
            .await
            .map_err(|e| format!("create Machine {name}: {e}"))?;
        let status = json!({"status": {"phase": "Pending", "bootstrapReady": false, "infrastructureReady": false}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(|e| format!("Machine {name} pending: {e}"))?;
        Ok(())
    }
}

/// Deletes every Machine of `cluster`; the number there was.
pub(super) async fn delete_all(api: &Api<DynamicObject>, cluster: &str) -> Result<usize, String> {
    let machines = list(api, cluster).await?;
    for machine in &machines {
        delete(api, machine).await?;
    }
    Ok(machines.len())
}

async fn list(api: &Api<DynamicObject>, cluster: &str) -> Result<Vec<DynamicObject>, String> {
    let params = ListParams::default().labels(&format!("{CLUSTER_NAME_LABEL}={cluster}"));
    let list = api
        .list(&params)
        .await
        .map_err(|e| format!("list Machines of {cluster}: {e}"))?;
    Ok(list
        .items
        .into_iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .collect())
}

async fn delete(api: &Api<DynamicObject>, machine: &DynamicObject) -> Result<(), String> {
    let name = machine.name_any();
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(format!("delete Machine {name}: {e}")),
    }
}

/// The Machine a group that is too large loses first: one annotated
/// [`DELETE_MACHINE_ANNOTATION`] (a scale-down that names its node marks it so, and Cluster
/// API's MachineSets and control planes honour the mark whatever their deletion policy), then
/// one at an older version than the topology's, then one not running yet, then the last listed.
fn victim<'a>(machines: &'a [DynamicObject], version_wanted: &str) -> Option<&'a DynamicObject> {
    machines
        .iter()
        .find(|m| m.annotations().contains_key(DELETE_MACHINE_ANNOTATION))
        .or_else(|| machines.iter().find(|m| version(m) != version_wanted))
        .or_else(|| machines.iter().find(|m| !running(m)))
        .or(machines.last())
}

fn running(machine: &DynamicObject) -> bool {
    machine.data["status"]["phase"] == "Running"
}

fn version(machine: &DynamicObject) -> &str {
    machine.data["spec"]["version"].as_str().unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A Machine named `name` at `version`, running or not, marked for deletion or not.
    fn machine(name: &str, version: &str, running: bool, marked: bool) -> DynamicObject {
        let annotations = if marked {
            json!({ DELETE_MACHINE_ANNOTATION: "yes" })
        } else {
            json!({})
        };
        let phase = if running { "Running" } else { "Pending" };
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"version": version},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    fn victim_of(machines: &[DynamicObject]) -> String {
        victim(machines, "v1.31.0").unwrap().name_any()
    }

    #[test]
    fn a_machine_marked_for_deletion_goes_before_any_other() {
        let old = machine("a", "v1.30.0", true, false);
        let pending = machine("c", "v1.31.0", false, false);
        let marked = machine("b", "v1.31.0", true, true);
        let last = machine("d", "v1.31.0", true, false);
        let all = [old.clone(), pending.clone(), marked, last.clone()];
        assert_eq!(victim_of(&all), "b");
        // Without a mark: one at an old version, then one not running, then the last.
        assert_eq!(victim_of(&[last.clone(), pending.clone(), old]), "a");
        assert_eq!(victim_of(&[last.clone(), pending]), "c");
        assert_eq!(
            victim_of(&[machine("e", "v1.31.0", true, false), last]),
            "d"
        );
        assert!(victim(&[], "v1.31.0").is_none());
    }
}
