//! The MachinePools of a topology (a cloud's scale set or node pool, as AKS and GKE have):
//! no Machine objects, only replicas the fake keeps in its memory, one step per tick —
//! remove a surplus replica, start a new one, add a missing one, or move one to the
//! topology's version — so Cluster API's counts in `status.workers` move as a cloud's would.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use kube::api::DynamicObject;
use kube::ResourceExt;
use serde_json::Value;

use super::machines::Count;

/// One virtual replica of a pool.
#[derive(Clone, Debug)]
struct Replica {
    version: String,
    ready: bool,
}

/// The replicas of each pool (by name) of each Cluster (by uid).
#[derive(Default)]
pub(super) struct Pools {
    clusters: Mutex<HashMap<String, BTreeMap<String, Vec<Replica>>>>,
}

/// How far a Cluster's pools are.
#[derive(Default, Debug)]
pub(super) struct Pooled {
    pub count: Count,
    /// Some replica runs an older version than the topology's.
    pub rolling: bool,
}

impl Pools {
    /// Takes one step towards `cluster`'s pools when `act` (nothing else moved this tick),
    /// and counts them.
    pub(super) fn step(&self, cluster: &DynamicObject, act: bool) -> Pooled {
        let topology = &cluster.data["spec"]["topology"];
        let version = topology["version"].as_str().unwrap_or_default();
        let desired: BTreeMap<String, i64> = topology["workers"]["machinePools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let name = p["name"].as_str()?.to_owned();
                Some((name, p["replicas"].as_i64().unwrap_or(1).max(0)))
            })
            .collect();
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        let uid = cluster.uid().unwrap_or_default();
        if desired.is_empty() && !clusters.contains_key(&uid) {
            return Pooled::default();
        }
        let pools = clusters.entry(uid).or_default();
        for name in desired.keys() {
            pools.entry(name.clone()).or_default();
        }
        if act {
            step(pools, &desired, version);
        }
        pools.retain(|name, replicas| desired.contains_key(name) || !replicas.is_empty());
        count(pools, &desired, version)
    }

    /// Drops what is kept of Clusters being deleted or gone (`keep`: the uids still there).
    pub(super) fn retain(&self, keep: &HashSet<String>) {
        self.clusters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|uid, _| keep.contains(uid));
    }
}

/// One action over all pools of a Cluster; `false` when there was nothing to do.
fn step(
    pools: &mut BTreeMap<String, Vec<Replica>>,
    desired: &BTreeMap<String, i64>,
    version: &str,
) -> bool {
    let want = |name: &str| desired.get(name).copied().unwrap_or(0);
    // A surplus replica (all of a pool no longer in the topology): an old one first.
    for (name, replicas) in pools.iter_mut() {
        if replicas.len() as i64 > want(name) {
            let victim = replicas
                .iter()
                .position(|r| r.version != version)
                .or_else(|| replicas.iter().position(|r| !r.ready))
                .unwrap_or(replicas.len() - 1);
            replicas.remove(victim);
            return true;
        }
    }
    if let Some(replica) = pools.values_mut().flatten().find(|r| !r.ready) {
        replica.ready = true;
        return true;
    }
    for (name, replicas) in pools.iter_mut() {
        if (replicas.len() as i64) < want(name) {
            replicas.push(Replica {
                version: version.to_owned(),
                ready: false,
            });
            return true;
        }
    }
    if let Some(replica) = pools.values_mut().flatten().find(|r| r.version != version) {
        // Replaced by a new one at the version: up to date, ready on the next tick.
        *replica = Replica {
            version: version.to_owned(),
            ready: false,
        };
        return true;
    }
    false
}

fn count(
    pools: &BTreeMap<String, Vec<Replica>>,
    desired: &BTreeMap<String, i64>,
    version: &str,
) -> Pooled {
    let mut pooled = Pooled::default();
    for (name, replicas) in pools {
        let want = desired.get(name).copied().unwrap_or(0);
        let n = |f: &dyn Fn(&Replica) -> bool| replicas.iter().filter(|r| f(r)).count() as i64;
        let count = Count {
            desired: want,
            replicas: replicas.len() as i64,
            running: n(&|r| r.ready),
            up_to_date: n(&|r| r.version == version),
            ready: n(&|r| r.ready && r.version == version).min(want),
        };
        pooled.count.add(&count);
        pooled.rolling |= replicas.iter().any(|r| r.version != version);
    }
    pooled
}

/// Whether the topology has worker pools of this kind.
pub(super) fn has_pools(cluster: &DynamicObject) -> bool {
    cluster.data["spec"]["topology"]["workers"]["machinePools"]
        .as_array()
        .is_some_and(|l| !l.is_empty())
}

/// Whether the topology leaves the control plane out: a managed one (AKS, GKE, EKS), with
/// no Machines.
pub(super) fn managed_control_plane(cluster: &DynamicObject) -> bool {
    !matches!(
        cluster.data["spec"]["topology"].get("controlPlane"),
        Some(Value::Object(_))
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(pools: &mut BTreeMap<String, Vec<Replica>>, desired: &[(&str, i64)], v: &str) -> usize {
        let desired: BTreeMap<String, i64> =
            desired.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect();
        for name in desired.keys() {
            pools.entry(name.clone()).or_default();
        }
        let mut steps = 0;
        while step(pools, &desired, v) {
            steps += 1;
        }
        let c = count(pools, &desired, v).count;
        assert!(c.done(), "{c:?}");
        steps
    }

    #[test]
    fn pools_scale_and_roll_one_replica_at_a_time() {
        let mut pools = BTreeMap::new();
        // Two replicas: add, start, add, start.
        assert_eq!(run(&mut pools, &[("mp-0", 2)], "v1.31.0"), 4);
        assert_eq!(run(&mut pools, &[("mp-0", 3)], "v1.31.0"), 2);
        // Each replica replaced, then started.
        assert_eq!(run(&mut pools, &[("mp-0", 3)], "v1.32.0"), 6);
        // A pool gone from the topology loses its replicas.
        assert_eq!(run(&mut pools, &[("mp-1", 1)], "v1.32.0"), 5);
    }
}
