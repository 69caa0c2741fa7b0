//! The inventory's charts: what the cluster page and the fleet dashboard draw, as SVG strings
//! built from stored rows (see [`crate`] for the drawing itself).

use std::collections::{BTreeMap, BTreeSet};

use kqueen_core::cluster::storage_quota::TenantStorage;
use kqueen_core::inventory::checks::Severity;
use kqueen_core::inventory::fleet::{FindingCount, PodCount};
use kqueen_core::inventory::{NodeInfo, PodPhase, Resources};

use crate::{bar_chart, format_value, BarChart, Series, Unit};

/// CPU or memory: which half of [`Resources`] a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Cpu,
    Memory,
}

impl Measure {
    /// The measure of `r` in words, as the charts print it ("3.6 cores", "16 GiB").
    #[must_use]
    pub fn words(self, r: Resources) -> String {
        format_value(self.unit(), self.of(r))
    }

    fn of(self, r: Resources) -> f64 {
        #[allow(clippy::cast_precision_loss)] // far below 2^52 millicores or bytes
        match self {
            Measure::Cpu => r.cpu_millis as f64 / 1000.0,
            Measure::Memory => r.memory_bytes as f64,
        }
    }

    fn unit(self) -> Unit {
        match self {
            Measure::Cpu => Unit::Cores,
            Measure::Memory => Unit::Bytes,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU",
            Measure::Memory => "Memory",
        }
    }
}

/// Capacity, allocatable, requested and (when the metrics API answered) used, per node. The
/// title says where "used" comes from, or that it is not known.
#[must_use]
pub fn node_chart(nodes: &[NodeInfo], measure: Measure) -> String {
    let metrics = nodes.iter().any(|n| n.used.is_some());
    let series = |name: &str, value: &dyn Fn(&NodeInfo) -> Option<Resources>| Series {
        name: name.to_owned(),
        values: nodes
            .iter()
            .map(|n| value(n).map(|r| measure.of(r)))
            .collect(),
        color: None,
    };
    let mut all = vec![
        series("capacity", &|n| Some(n.capacity)),
        series("allocatable", &|n| Some(n.allocatable)),
        series("requested", &|n| Some(n.requested)),
    ];
    if metrics {
        all.push(series("used", &|n| n.used));
    }
    let title = if metrics {
        format!("{} per node (used: metrics API)", measure.label())
    } else {
        format!(
            "{} per node (requests vs allocatable; no metrics API)",
            measure.label()
        )
    };
    bar_chart(&BarChart {
        title,
        value_label: measure.label().to_owned(),
        unit: measure.unit(),
        categories: nodes.iter().map(|n| n.name.clone()).collect(),
        series: all,
        stacked: false,
    })
}

/// Pods per namespace, stacked by phase (phases with no pod are left out).
#[must_use]
pub fn pod_phase_chart(pods: &[PodCount]) -> String {
    let mut by_ns: BTreeMap<&str, BTreeMap<PodPhase, u32>> = BTreeMap::new();
    for p in pods {
        *by_ns
            .entry(p.namespace.as_str())
            .or_default()
            .entry(p.phase)
            .or_default() += p.count;
    }
    let phases: Vec<PodPhase> = PodPhase::ALL
        .iter()
        .copied()
        .filter(|ph| pods.iter().any(|p| p.phase == *ph && p.count > 0))
        .collect();
    bar_chart(&BarChart {
        title: "Pods per namespace and phase".to_owned(),
        value_label: "Pods".to_owned(),
        unit: Unit::Count,
        categories: by_ns.keys().map(|ns| (*ns).to_owned()).collect(),
        series: phases
            .iter()
            .map(|ph| Series {
                name: ph.as_str().to_owned(),
                values: by_ns
                    .values()
                    .map(|counts| Some(f64::from(counts.get(ph).copied().unwrap_or(0))))
                    .collect(),
                color: None,
            })
            .collect(),
        stacked: true,
    })
}

/// One bar per counted thing ("clusters by provider").
#[must_use]
pub fn count_chart(title: &str, value_label: &str, counts: &[(String, u64)]) -> String {
    bar_chart(&BarChart {
        title: title.to_owned(),
        value_label: value_label.to_owned(),
        unit: Unit::Count,
        categories: counts.iter().map(|(k, _)| k.clone()).collect(),
        series: vec![Series {
            name: value_label.to_lowercase(),
            #[allow(clippy::cast_precision_loss)] // counts far below 2^52
            values: counts.iter().map(|(_, v)| Some(*v as f64)).collect(),
            color: None,
        }],
        stacked: false,
    })
}

/// The colour of a severity, the same as the portal's badges (`.badge-sev-*` in
/// `style/main.css`): red for high, amber for medium, blue for low.
#[must_use]
pub fn severity_color(severity: Severity) -> [u8; 3] {
    match severity {
        Severity::High => [0xB4, 0x23, 0x18],
        Severity::Medium => [0x9A, 0x67, 0x00],
        Severity::Low => [0x1F, 0x4F, 0xB8],
    }
}

/// Findings per check, stacked by severity (most severe first), each in its severity's colour.
#[must_use]
pub fn findings_chart(counts: &[FindingCount]) -> String {
    let checks: Vec<&str> = counts
        .iter()
        .map(|c| c.check.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let severities: Vec<Severity> = Severity::ALL
        .iter()
        .copied()
        .filter(|s| counts.iter().any(|c| c.severity == *s))
        .collect();
    bar_chart(&BarChart {
        title: "Findings by check and severity".to_owned(),
        value_label: "Findings".to_owned(),
        unit: Unit::Count,
        categories: checks.iter().map(|c| (*c).to_owned()).collect(),
        series: severities
            .iter()
            .map(|s| Series {
                name: s.as_str().to_owned(),
                values: checks
                    .iter()
                    .map(|check| {
                        let n: u64 = counts
                            .iter()
                            .filter(|c| c.severity == *s && c.check == *check)
                            .map(|c| c.count)
                            .sum();
                        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
                        Some(n as f64)
                    })
                    .collect(),
                color: Some(severity_color(*s)),
            })
            .collect(),
        stacked: true,
    })
}

/// Fleet totals of one measure: capacity, allocatable, requested, used (unknown when no
/// cluster reports metrics).
#[must_use]
pub fn totals_chart(
    capacity: Resources,
    allocatable: Resources,
    requested: Resources,
    used: Option<Resources>,
    measure: Measure,
) -> String {
    let values = [Some(capacity), Some(allocatable), Some(requested), used]
        .map(|r| r.map(|r| measure.of(r)))
        .to_vec();
    bar_chart(&BarChart {
        title: format!("{} of the fleet", measure.label()),
        value_label: measure.label().to_owned(),
        unit: measure.unit(),
        categories: ["capacity", "allocatable", "requested", "used"]
            .map(str::to_owned)
            .to_vec(),
        series: vec![Series {
            name: measure.label().to_lowercase(),
            values,
            color: None,
        }],
        stacked: false,
    })
}

/// Shared etcd per tenant: what its hosted clusters keep there and its quota ("unknown": no
/// quota), so operators see who is near or over it.
#[must_use]
pub fn storage_chart(tenants: &[TenantStorage]) -> String {
    #[allow(clippy::cast_precision_loss)] // bytes far below 2^52
    let bytes = |v: u64| Some(v as f64);
    bar_chart(&BarChart {
        title: "Shared etcd per tenant".to_owned(),
        value_label: "etcd".to_owned(),
        unit: Unit::Bytes,
        categories: tenants.iter().map(|t| t.tenant.clone()).collect(),
        series: vec![
            Series {
                name: "used".to_owned(),
                values: tenants.iter().map(|t| bytes(t.used())).collect(),
                color: None,
            },
            Series {
                name: "quota".to_owned(),
                values: tenants.iter().map(|t| t.quota.and_then(bytes)).collect(),
                color: None,
            },
        ],
        stacked: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn node(name: &str, cores: u64, used: Option<u64>) -> NodeInfo {
        NodeInfo {
            name: name.to_owned(),
            ready: true,
            capacity: Resources {
                cpu_millis: cores * 1000,
                memory_bytes: cores * 4 * GIB,
            },
            allocatable: Resources {
                cpu_millis: cores * 900,
                memory_bytes: cores * 3 * GIB,
            },
            requested: Resources {
                cpu_millis: 250,
                memory_bytes: GIB,
            },
            used: used.map(|m| Resources {
                cpu_millis: m,
                memory_bytes: GIB / 2,
            }),
            ..NodeInfo::default()
        }
    }

    /// Rectangles that are bars (the chart's background and legend swatches aside).
    fn bars(svg: &str) -> usize {
        svg.matches("<rect").count()
    }

    fn desc(svg: &str) -> &str {
        svg.split("-desc\">")
            .nth(1)
            .and_then(|d| d.split("</desc>").next())
            .unwrap_or_default()
    }

    #[test]
    fn node_chart_has_a_bar_per_node_and_value_and_names_its_source() {
        let nodes = [node("node-a", 4, Some(1500)), node("node-b", 8, None)];
        let cpu = node_chart(&nodes, Measure::Cpu);
        assert!(cpu.contains(">CPU per node (used: metrics API)</title>"));
        assert!(
            cpu.contains(">\nCPU (cores)\n</text>"),
            "axis label with unit"
        );
        assert_eq!(
            desc(&cpu),
            "node-a: capacity 4 cores, allocatable 3.6 cores, requested 0.25 cores, used 1.5 cores. \
             node-b: capacity 8 cores, allocatable 7.2 cores, requested 0.25 cores, used unknown."
        );
        assert!(!cpu.contains("NaN"));
        let memory = node_chart(&nodes, Measure::Memory);
        assert!(desc(&memory).starts_with("node-a: capacity 16 GiB"));

        let without = node_chart(&nodes[1..], Measure::Cpu);
        assert!(without.contains("(requests vs allocatable; no metrics API)</title>"));
        assert!(!desc(&without).contains("used"), "no used series at all");
        // Three bars for the one node, plus the background.
        assert_eq!(bars(&without), bars(&node_chart(&[], Measure::Cpu)) + 3);
    }

    #[test]
    fn pods_are_stacked_by_phase_per_namespace() {
        let count = |ns: &str, phase, count| PodCount {
            namespace: ns.to_owned(),
            phase,
            count,
        };
        let svg = pod_phase_chart(&[
            count("default", PodPhase::Running, 3),
            count("default", PodPhase::Failed, 1),
            count("kube-system", PodPhase::Running, 7),
        ]);
        assert!(svg.contains(">Pods per namespace and phase</title>"));
        assert_eq!(
            desc(&svg),
            "default: Running 3, Failed 1, total 4. kube-system: Running 7, Failed 0, total 7."
        );
        assert!(
            !svg.contains(">Pending<"),
            "phases without pods are left out"
        );
        assert!(pod_phase_chart(&[]).contains(">No data</text>"));
    }

    #[test]
    fn counts_and_totals() {
        let svg = count_chart(
            "Clusters by provider",
            "Clusters",
            &[("jenkins".into(), 3), ("import".into(), 1)],
        );
        assert_eq!(desc(&svg), "jenkins: clusters 3. import: clusters 1.");
        let r = |c, m| Resources {
            cpu_millis: c,
            memory_bytes: m,
        };
        let svg = totals_chart(r(8000, 0), r(7000, 0), r(2500, 0), None, Measure::Cpu);
        assert!(svg.contains(">CPU of the fleet</title>"));
        let finding = |severity, check: &str, count| FindingCount {
            severity,
            check: check.to_owned(),
            count,
        };
        let findings = findings_chart(&[
            finding(Severity::High, "privileged", 2),
            finding(Severity::Medium, "latest-tag", 5),
        ]);
        assert_eq!(
            desc(&findings),
            "latest-tag: high 0, medium 5, total 5. privileged: high 2, medium 0, total 2."
        );
        // Severities keep their colours (the table's badges): high red, medium amber; the
        // palette would have made high blue.
        let fills = |svg: &str, tag: &str| -> Vec<String> {
            (svg.split(tag).skip(1))
                .filter_map(|r| r.split("fill=\"").nth(1)?.split('"').next())
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(fills(&findings, "<polygon"), ["#B42318", "#9A6700"]);
        let bars = fills(&findings, "<rect");
        assert!(bars.contains(&"#B42318".to_owned()) && bars.contains(&"#9A6700".to_owned()));
        assert!(!bars.contains(&"#0072B2".to_owned()));
        assert_eq!(
            desc(&svg),
            "capacity: cpu 8 cores. allocatable: cpu 7 cores. requested: cpu 2.5 cores. used: cpu unknown."
        );
    }

    #[test]
    fn storage_per_tenant_used_and_quota() {
        let tenant = |name: &str, bytes: u64, quota| TenantStorage {
            tenant: name.to_owned(),
            quota,
            clusters: vec![kqueen_core::cluster::storage_quota::ClusterStorage {
                cluster: "dev".to_owned(),
                keys: 300,
                bytes,
                writable: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let svg = storage_chart(&[
            tenant("team-a", 3 * GIB / 2, Some(GIB)),
            tenant("team-b", GIB / 4, None),
        ]);
        assert!(svg.contains(">Shared etcd per tenant</title>"));
        assert!(
            svg.contains(">\netcd (GiB)\n</text>"),
            "axis label with unit"
        );
        assert_eq!(
            desc(&svg),
            "team-a: used 1.5 GiB, quota 1 GiB. team-b: used 0.25 GiB, quota unknown."
        );
        assert!(storage_chart(&[]).contains(">No data</text>"));
    }
}
