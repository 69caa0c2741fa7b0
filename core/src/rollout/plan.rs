//! Which clusters a rollout upgrades, in which wave, and which it leaves out and why.

use std::cmp::Ordering;

use serde::Serialize;
use uuid::Uuid;

use super::version;
use super::RolloutFilter;
use crate::cluster::ClusterState;

/// A live cluster as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub cluster_id: Uuid,
    pub name: String,
    pub tenant_id: Uuid,
    pub tenant: String,
    pub provider: String,
    pub state: ClusterState,
    /// The version it runs: its `kubernetes_version`, else what its API server reported.
    pub version: Option<String>,
    pub production: bool,
    /// Why it cannot be upgraded to the target (its provider cannot upgrade, its template
    /// does not offer the version): None when it can.
    pub refusal: Option<String>,
    /// The open rollout it is part of already.
    pub in_rollout: Option<Uuid>,
}

/// A cluster the filter took but the rollout leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Excluded {
    pub cluster: Candidate,
    pub reason: String,
}

/// What a rollout would do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The waves, in order; production clusters come last, the rest by tenant and name.
    pub waves: Vec<Vec<Candidate>>,
    pub excluded: Vec<Excluded>,
}

impl Plan {
    pub fn clusters(&self) -> usize {
        self.waves.iter().map(Vec::len).sum()
    }
}

/// Whether `c` is one of the clusters `filter` picks.
pub fn picked(filter: &RolloutFilter, c: &Candidate) -> bool {
    filter.tenant.as_deref().is_none_or(|t| t == c.tenant)
        && filter.provider.as_deref().is_none_or(|p| p == c.provider)
        && filter.version.as_deref().is_none_or(|v| {
            c.version
                .as_deref()
                .is_some_and(|cv| version::matches(cv, v))
        })
}

/// Why `c` is left out of an upgrade to `target`, if it is.
fn left_out(c: &Candidate, target: &str) -> Option<String> {
    if let Some(why) = &c.refusal {
        return Some(why.clone());
    }
    if !matches!(c.state, ClusterState::Ready | ClusterState::Updating) {
        return Some(format!("it is {}", c.state.label()));
    }
    let Some(v) = c.version.as_deref() else {
        return Some("its Kubernetes version is not known".into());
    };
    match version::compare(v, target) {
        None => Some(format!("its version {v} cannot be compared with {target}")),
        Some(Ordering::Equal) => Some(format!("it runs {v} already")),
        Some(Ordering::Greater) => Some(format!("it runs {v}, newer than {target}")),
        Some(Ordering::Less) => c
            .in_rollout
            .map(|r| format!("it is in rollout {r}, which has not ended")),
    }
}

/// The plan of an upgrade to `target` of the `candidates` the filter picks, `wave_size` at a
/// time (at least 1).
pub fn plan(
    candidates: &[Candidate],
    filter: &RolloutFilter,
    target: &str,
    wave_size: u32,
) -> Plan {
    let mut taken = Vec::new();
    let mut excluded = Vec::new();
    for c in candidates.iter().filter(|c| picked(filter, c)) {
        match left_out(c, target) {
            Some(reason) => excluded.push(Excluded {
                cluster: c.clone(),
                reason,
            }),
            None => taken.push(c.clone()),
        }
    }
    taken.sort_by(|a, b| {
        (a.production, &a.tenant, &a.name).cmp(&(b.production, &b.tenant, &b.name))
    });
    excluded.sort_by(|a, b| {
        (&a.cluster.tenant, &a.cluster.name).cmp(&(&b.cluster.tenant, &b.cluster.name))
    });
    let size = usize::try_from(wave_size.max(1)).unwrap_or(1);
    Plan {
        waves: taken.chunks(size).map(<[Candidate]>::to_vec).collect(),
        excluded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(tenant: &str, name: &str, version: &str) -> Candidate {
        Candidate {
            cluster_id: Uuid::now_v7(),
            name: name.into(),
            tenant_id: Uuid::nil(),
            tenant: tenant.into(),
            provider: "hosted".into(),
            state: ClusterState::Ready,
            version: Some(version.into()),
            production: false,
            refusal: None,
            in_rollout: None,
        }
    }

    fn names(plan: &Plan) -> Vec<Vec<&str>> {
        plan.waves
            .iter()
            .map(|w| w.iter().map(|c| c.name.as_str()).collect())
            .collect()
    }

    #[test]
    fn waves_of_the_size_asked_production_last() {
        let mut prod = cluster("a", "aa", "1.20");
        prod.production = true;
        let all = vec![
            cluster("b", "b1", "1.20"),
            prod,
            cluster("a", "a2", "v1.20.2"),
            cluster("a", "a1", "1.20"),
            cluster("b", "b2", "1.20"),
        ];
        let plan = plan(&all, &RolloutFilter::default(), "1.21", 2);
        assert_eq!(
            names(&plan),
            vec![vec!["a1", "a2"], vec!["b1", "b2"], vec!["aa"]]
        );
        assert_eq!(plan.clusters(), 5);
        assert!(plan.excluded.is_empty());
    }

    #[test]
    fn the_filter_picks_and_the_rest_is_left_out_with_a_reason() {
        let mut other = cluster("b", "other-tenant", "1.20");
        other.provider = "capi".into();
        let mut broken = cluster("a", "broken", "1.20");
        broken.state = ClusterState::Error;
        let mut fixed = cluster("a", "fixed", "1.20");
        fixed.refusal = Some("is fixed at 1.20 by template small".into());
        let mut busy = cluster("a", "busy", "1.20");
        busy.in_rollout = Some(Uuid::nil());
        let mut unknown = cluster("a", "unknown", "1.20");
        unknown.version = None;
        let all = vec![
            cluster("a", "old", "1.19.4"),
            cluster("a", "done", "1.21.0"),
            cluster("a", "newer", "1.22"),
            other,
            broken,
            fixed,
            busy,
            unknown,
            cluster("a", "ok", "1.20.1"),
        ];
        let filter = RolloutFilter {
            tenant: Some("a".into()),
            version: Some("1.20".into()),
            ..RolloutFilter::default()
        };
        let plan = plan(&all, &filter, "1.21", 3);
        assert_eq!(names(&plan), vec![vec!["ok"]]);
        let why: Vec<(&str, &str)> = plan
            .excluded
            .iter()
            .map(|e| (e.cluster.name.as_str(), e.reason.as_str()))
            .collect();
        assert_eq!(
            why,
            vec![
                ("broken", "it is Error"),
                (
                    "busy",
                    "it is in rollout 00000000-0000-0000-0000-000000000000, which has not ended"
                ),
                ("fixed", "is fixed at 1.20 by template small"),
            ]
        );
        let everything = plan_all(&all);
        let why: Vec<(&str, &str)> = everything
            .excluded
            .iter()
            .filter(|e| ["done", "newer", "unknown"].contains(&e.cluster.name.as_str()))
            .map(|e| (e.cluster.name.as_str(), e.reason.as_str()))
            .collect();
        assert_eq!(
            why,
            vec![
                ("done", "it runs 1.21.0 already"),
                ("newer", "it runs 1.22, newer than 1.21"),
                ("unknown", "its Kubernetes version is not known"),
            ]
        );
        assert_eq!(
            names(&everything),
            vec![vec!["ok", "old"], vec!["other-tenant"]]
        );
    }

    fn plan_all(all: &[Candidate]) -> Plan {
        plan(all, &RolloutFilter::default(), "1.21", 2)
    }

    #[test]
    fn a_wave_size_of_zero_is_one() {
        let all = vec![cluster("a", "x", "1.20"), cluster("a", "y", "1.20")];
        assert_eq!(
            names(&plan(&all, &RolloutFilter::default(), "1.21", 0)),
            vec![vec!["x"], vec!["y"]]
        );
    }
}
