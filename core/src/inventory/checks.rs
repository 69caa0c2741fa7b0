//! Pluggable audit checks: each looks at one cluster's [`Snapshot`] and reports findings.
//! They run after every successful sync; their findings are stored with the inventory, so
//! the findings page is a query, not a fan-out. Add a check by implementing [`AuditCheck`]
//! and listing it in [`builtin`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::cluster::string_enum;

use super::{minor_version, ContainerInfo, ImageRef, Snapshot, WorkloadKind};

string_enum!(
    /// How bad a finding is; sorts most severe first.
    Severity {
        High = "high",
        Medium = "medium",
        Low = "low",
    }
);

/// One problem found in one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The check's id (`latest-tag`).
    pub check: String,
    pub severity: Severity,
    /// What it is about: `namespace/Kind/name container c`, a node name, the cluster.
    pub subject: String,
    pub message: String,
}

pub trait AuditCheck: Send + Sync {
    /// Stable id, used in filters and exports.
    fn id(&self) -> &'static str;
    /// One line for people.
    fn title(&self) -> &'static str;
    fn severity(&self) -> Severity;
    /// Findings as `(subject, message)`.
    fn run(&self, snapshot: &Snapshot) -> Vec<(String, String)>;
}

/// What the built-in checks need from configuration.
#[derive(Debug, Clone, Default)]
pub struct CheckSettings {
    /// Allowed image sources: a registry (`registry.k8s.io`), a registry and path prefix
    /// (`ghcr.io/acme`) or a registry suffix (`*.corp.example`). Empty: the check is off.
    pub allowed_registries: Vec<String>,
    /// The oldest supported Kubernetes minor version; none: the check is off.
    pub min_kubernetes: Option<(u32, u32)>,
}

/// The checks KQueen ships, configured.
pub fn builtin(settings: &CheckSettings) -> Vec<Box<dyn AuditCheck>> {
    let mut checks: Vec<Box<dyn AuditCheck>> = vec![
        Box::new(FloatingTag),
        Box::new(PrivilegedOrHostPath),
        Box::new(NodeNotReady),
    ];
    if !settings.allowed_registries.is_empty() {
        checks.push(Box::new(RegistryAllowList {
            allowed: settings.allowed_registries.clone(),
        }));
    }
    if let Some(min) = settings.min_kubernetes {
        checks.push(Box::new(UnsupportedVersion { min }));
    }
    checks
}

/// Runs `checks` on `snapshot`.
pub fn run_all(checks: &[Box<dyn AuditCheck>], snapshot: &Snapshot) -> Vec<Finding> {
    checks
        .iter()
        .flat_map(|c| {
            c.run(snapshot)
                .into_iter()
                .map(|(subject, message)| Finding {
                    check: c.id().to_owned(),
                    severity: c.severity(),
                    subject,
                    message,
                })
        })
        .collect()
}

/// A workload's container, once per workload (not once per replica).
struct WorkloadContainer<'a> {
    subject: String,
    container: &'a ContainerInfo,
    host_path: bool,
}

fn workload_containers(s: &Snapshot) -> Vec<WorkloadContainer<'_>> {
    let mut seen: BTreeSet<(&str, WorkloadKind, &str, &str)> = BTreeSet::new();
    let mut out = Vec::new();
    for p in &s.pods {
        for c in &p.containers {
            let key = (
                p.namespace.as_str(),
                p.workload_kind,
                p.workload_name.as_str(),
                c.name.as_str(),
            );
            if seen.insert(key) {
                out.push(WorkloadContainer {
                    subject: format!(
                        "{}/{}/{} container {}",
                        p.namespace,
                        p.workload_kind.as_str(),
                        p.workload_name,
                        c.name
                    ),
                    container: c,
                    host_path: p.host_path,
                });
            }
        }
    }
    out
}

/// Images that move under the cluster: `:latest`, or no tag and no digest.
pub struct FloatingTag;

impl AuditCheck for FloatingTag {
    fn id(&self) -> &'static str {
        "latest-tag"
    }
    fn title(&self) -> &'static str {
        "Image with :latest or no tag"
    }
    fn severity(&self) -> Severity {
        Severity::Medium
    }
    fn run(&self, s: &Snapshot) -> Vec<(String, String)> {
        workload_containers(s)
            .into_iter()
            // Judged on the pod spec: a digest the status reports says what runs now, not
            // what the next pull gets.
            .filter(|w| ImageRef::parse(&w.container.image_spec).is_some_and(|i| i.floats()))
            .map(|w| {
                let m = format!(
                    "image '{}' has no fixed tag or digest: what runs can change on any restart",
                    w.container.image_spec
                );
                (w.subject, m)
            })
            .collect()
    }
}

/// Images from registries outside the configured allow-list.
pub struct RegistryAllowList {
    pub allowed: Vec<String>,
}

impl RegistryAllowList {
    fn allows(&self, registry: &str, repository: &str) -> bool {
        let full = format!("{registry}/{repository}");
        self.allowed.iter().any(|a| {
            let a = a.trim().trim_end_matches('/');
            if let Some(suffix) = a.strip_prefix("*.") {
                registry.ends_with(&format!(".{suffix}"))
            } else {
                full == a || full.starts_with(&format!("{a}/")) || registry == a
            }
        })
    }
}

impl AuditCheck for RegistryAllowList {
    fn id(&self) -> &'static str {
        "registry-not-allowed"
    }
    fn title(&self) -> &'static str {
        "Image from a registry outside the allow-list"
    }
    fn severity(&self) -> Severity {
        Severity::High
    }
    fn run(&self, s: &Snapshot) -> Vec<(String, String)> {
        workload_containers(s)
            .into_iter()
            .filter_map(|w| {
                let message = match &w.container.image {
                    Some(i) if self.allows(&i.registry, &i.repository) => return None,
                    Some(i) => format!(
                        "image '{}' comes from {}, which is not in the allow-list",
                        w.container.image_spec, i.registry
                    ),
                    None => format!(
                        "image reference '{}' cannot be parsed",
                        w.container.image_spec
                    ),
                };
                Some((w.subject, message))
            })
            .collect()
    }
}

/// Privileged containers and pods that mount host paths: both reach the node itself.
pub struct PrivilegedOrHostPath;

impl AuditCheck for PrivilegedOrHostPath {
    fn id(&self) -> &'static str {
        "privileged"
    }
    fn title(&self) -> &'static str {
        "Privileged container or hostPath volume"
    }
    fn severity(&self) -> Severity {
        Severity::High
    }
    fn run(&self, s: &Snapshot) -> Vec<(String, String)> {
        workload_containers(s)
            .into_iter()
            .filter_map(|w| {
                let why = match (w.container.privileged, w.host_path) {
                    (true, true) => "runs privileged and its pod mounts a hostPath volume",
                    (true, false) => "runs privileged",
                    (false, true) => "its pod mounts a hostPath volume",
                    (false, false) => return None,
                };
                Some((w.subject, why.to_owned()))
            })
            .collect()
    }
}

pub struct NodeNotReady;

impl AuditCheck for NodeNotReady {
    fn id(&self) -> &'static str {
        "node-not-ready"
    }
    fn title(&self) -> &'static str {
        "Node not Ready"
    }
    fn severity(&self) -> Severity {
        Severity::High
    }
    fn run(&self, s: &Snapshot) -> Vec<(String, String)> {
        s.nodes
            .iter()
            .filter(|n| !n.ready)
            .map(|n| (n.name.clone(), n.problems.join(", ")))
            .collect()
    }
}

/// Clusters whose API server is older than the oldest supported minor version.
pub struct UnsupportedVersion {
    pub min: (u32, u32),
}

impl AuditCheck for UnsupportedVersion {
    fn id(&self) -> &'static str {
        "unsupported-version"
    }
    fn title(&self) -> &'static str {
        "Kubernetes version no longer supported"
    }
    fn severity(&self) -> Severity {
        Severity::Medium
    }
    fn run(&self, s: &Snapshot) -> Vec<(String, String)> {
        let (major, minor) = self.min;
        match minor_version(&s.api_version) {
            Some(v) if v >= self.min => Vec::new(),
            Some(_) => vec![(
                "API server".to_owned(),
                format!(
                    "runs {}; the oldest supported version is {major}.{minor}",
                    s.api_version
                ),
            )],
            None => vec![(
                "API server".to_owned(),
                format!("reports an unrecognised version '{}'", s.api_version),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{NodeInfo, PodInfo, PodPhase, Resources};

    fn pod(ns: &str, workload: &str, images: &[&str]) -> PodInfo {
        PodInfo {
            namespace: ns.into(),
            name: format!("{workload}-x"),
            phase: PodPhase::Running,
            node: Some("n1".into()),
            restarts: 0,
            workload_kind: WorkloadKind::Deployment,
            workload_name: workload.into(),
            requests: Resources::default(),
            limits: Resources::default(),
            host_path: false,
            containers: images
                .iter()
                .enumerate()
                .map(|(i, img)| ContainerInfo {
                    name: format!("c{i}"),
                    image_spec: (*img).into(),
                    image: ImageRef::parse(img),
                    privileged: false,
                    init: false,
                })
                .collect(),
        }
    }

    fn snap(pods: Vec<PodInfo>) -> Snapshot {
        Snapshot {
            api_version: "v1.33.1".into(),
            pods,
            ..Snapshot::default()
        }
    }

    fn subjects(c: &dyn AuditCheck, s: &Snapshot) -> Vec<String> {
        c.run(s).into_iter().map(|(s, _)| s).collect()
    }

    #[test]
    fn floating_tags_once_per_workload() {
        let mut replica = pod("web", "front", &["nginx"]);
        replica.name = "front-y".into();
        let s = snap(vec![
            pod("web", "front", &["nginx"]),
            replica,
            pod("web", "api", &["ghcr.io/acme/api:latest", "busybox:1.36"]),
            pod("web", "pinned", &["redis:7.2"]),
        ]);
        assert_eq!(
            subjects(&FloatingTag, &s),
            [
                "web/Deployment/front container c0",
                "web/Deployment/api container c0"
            ]
        );
        assert!(subjects(&FloatingTag, &snap(vec![pod("a", "b", &["x:1"])])).is_empty());
    }

    #[test]
    fn registry_allow_list() {
        let check = RegistryAllowList {
            allowed: vec![
                "registry.k8s.io".into(),
                "ghcr.io/acme".into(),
                "*.corp.example".into(),
            ],
        };
        let s = snap(vec![
            pod("a", "ok1", &["registry.k8s.io/pause:3.9"]),
            pod("a", "ok2", &["ghcr.io/acme/api:1"]),
            pod("a", "ok3", &["images.corp.example/tool:2"]),
            pod("a", "bad1", &["ghcr.io/acmeevil/api:1"]),
            pod("a", "bad2", &["nginx:1.27"]),
            pod("a", "bad3", &["corp.example.evil.io/x:1"]),
            pod("a", "bad4", &["not a ref"]),
        ]);
        let found = check.run(&s);
        let names: Vec<&str> = found.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "a/Deployment/bad1 container c0",
                "a/Deployment/bad2 container c0",
                "a/Deployment/bad3 container c0",
                "a/Deployment/bad4 container c0"
            ]
        );
        assert!(found[1].1.contains("docker.io"), "{}", found[1].1);
        assert!(found[3].1.contains("cannot be parsed"));
    }

    #[test]
    fn privileged_and_host_path() {
        let mut p1 = pod("kube-system", "cni", &["cni:1"]);
        p1.containers[0].privileged = true;
        let mut p2 = pod("logs", "agent", &["agent:1"]);
        p2.host_path = true;
        let s = snap(vec![p1, p2, pod("web", "front", &["nginx:1"])]);
        let found = PrivilegedOrHostPath.run(&s);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].1, "runs privileged");
        assert!(found[1].1.contains("hostPath"));
    }

    #[test]
    fn nodes_not_ready() {
        let mut s = snap(vec![]);
        s.nodes = vec![
            NodeInfo {
                name: "ok".into(),
                ready: true,
                ..NodeInfo::default()
            },
            NodeInfo {
                name: "sick".into(),
                ready: false,
                problems: vec!["NotReady".into(), "DiskPressure".into()],
                ..NodeInfo::default()
            },
        ];
        assert_eq!(
            NodeNotReady.run(&s),
            [("sick".to_owned(), "NotReady, DiskPressure".to_owned())]
        );
    }

    #[test]
    fn unsupported_versions() {
        let check = UnsupportedVersion { min: (1, 31) };
        let at = |v: &str| {
            let mut s = snap(vec![]);
            s.api_version = v.into();
            check.run(&s)
        };
        assert!(at("v1.31.0").is_empty());
        assert!(at("v1.34.2").is_empty());
        assert!(at("v2.0.0").is_empty());
        assert!(at("v1.30.9")[0].1.contains("1.31"));
        assert!(at("garbage")[0].1.contains("unrecognised"));
    }

    #[test]
    fn builtin_checks_follow_the_settings() {
        let ids = |s: &CheckSettings| builtin(s).iter().map(|c| c.id()).collect::<Vec<_>>();
        assert_eq!(
            ids(&CheckSettings::default()),
            ["latest-tag", "privileged", "node-not-ready"]
        );
        let all = CheckSettings {
            allowed_registries: vec!["registry.k8s.io".into()],
            min_kubernetes: Some((1, 30)),
        };
        assert_eq!(ids(&all).len(), 5);
        let s = snap(vec![pod("a", "b", &["nginx"])]);
        let f = run_all(&builtin(&all), &s);
        assert!(f
            .iter()
            .any(|f| f.check == "latest-tag" && f.severity == Severity::Medium));
        assert!(f
            .iter()
            .any(|f| f.check == "registry-not-allowed" && f.severity == Severity::High));
    }
}
