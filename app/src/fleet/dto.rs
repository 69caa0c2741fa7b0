//! What the inventory and fleet pages receive: plain data, quantities already in words, charts
//! already drawn (SVG strings made on the server).

use serde::{Deserialize, Serialize};

use crate::hydrated::ScriptRow;

/// Filters of the fleet pages, as in their URLs. Empty fields filter nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FleetQuery {
    pub tenant: String,
    pub cluster: String,
    pub q: String,
    pub severity: String,
    pub check: String,
}

impl FleetQuery {
    /// The non-empty filters as a query string (`tenant=a&q=nginx`), values encoded.
    pub fn to_query(&self) -> String {
        [
            ("tenant", &self.tenant),
            ("cluster", &self.cluster),
            ("q", &self.q),
            ("severity", &self.severity),
            ("check", &self.check),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", crate::query::encode_query_value(v)))
        .collect::<Vec<_>>()
        .join("&")
    }
}

/// CPU and memory of one node or cluster, in words ("3.6 cores", "16 GiB").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourcesDto {
    pub cpu: String,
    pub memory: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRowDto {
    pub name: String,
    pub ready: bool,
    pub problems: Vec<String>,
    /// "2026-11-26 13:20 UTC": when it stopped being Ready.
    pub not_ready_since: Option<String>,
    pub kubelet: String,
    pub runtime: String,
    pub os: String,
    pub capacity: ResourcesDto,
    pub allocatable: ResourcesDto,
    pub requested: ResourcesDto,
    pub used: Option<ResourcesDto>,
    pub pods: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadDto {
    pub kind: String,
    pub name: String,
    pub desired: u32,
    pub ready: u32,
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceDto {
    pub namespace: String,
    pub workloads: Vec<WorkloadDto>,
    /// Workloads not Ready (progressing or failed).
    pub not_ready: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingDto {
    pub check: String,
    pub severity: String,
    pub subject: String,
    pub message: String,
}

/// A cluster's stored inventory, for its page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryDto {
    pub synced: Option<String>,
    pub attempted: Option<String>,
    pub error: Option<String>,
    pub api_version: Option<String>,
    /// Usage comes from the metrics API (else only requests are known).
    pub metrics: bool,
    /// The last successful sync is older than the configured staleness.
    pub stale: bool,
    pub nodes: Vec<NodeRowDto>,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub cpu_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub memory_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub pods_chart: String,
    pub pods: u32,
    pub namespaces: Vec<NamespaceDto>,
    pub findings: Vec<FindingDto>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetClusterDto {
    pub id: String,
    pub name: String,
    pub tenant: String,
    pub state: String,
    pub state_label: String,
    pub provider: String,
    pub api_version: Option<String>,
    pub nodes: u32,
    pub nodes_ready: u32,
    pub allocatable: ResourcesDto,
    pub requested: ResourcesDto,
    pub synced: Option<String>,
    pub sync_error: Option<String>,
    /// Operators, hosted clusters: its etcd key space in words ("215 keys, 1.2 MiB").
    pub etcd: Option<String>,
    /// Its etcd key space is read-only (its tenant is over its storage quota).
    pub etcd_read_only: bool,
}

/// A tenant's shared etcd usage against its quota, in words (operators).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantStorageDto {
    pub tenant: String,
    pub clusters: u32,
    pub used: String,
    /// "1 GiB", or "none".
    pub quota: String,
    /// Of the quota, when there is one ("85 %").
    pub share: Option<String>,
    pub writable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionDto {
    pub cluster: FleetClusterDto,
    pub reasons: Vec<String>,
}

impl ScriptRow for AttentionDto {
    /// Every field, in order, the cluster's and its quantities' as arrays too.
    fn script_form(&self) -> impl Serialize + '_ {
        let AttentionDto { cluster, reasons } = self;
        let FleetClusterDto {
            id,
            name,
            tenant,
            state,
            state_label,
            provider,
            api_version,
            nodes,
            nodes_ready,
            allocatable,
            requested,
            synced,
            sync_error,
            etcd,
            etcd_read_only,
        } = cluster;
        fn pair(ResourcesDto { cpu, memory }: &ResourcesDto) -> (&String, &String) {
            (cpu, memory)
        }
        (
            (
                id,
                name,
                tenant,
                state,
                state_label,
                provider,
                api_version,
                nodes,
                nodes_ready,
                pair(allocatable),
                pair(requested),
                synced,
                sync_error,
                etcd,
                etcd_read_only,
            ),
            reasons,
        )
    }
}

/// The fleet dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetPageDto {
    pub clusters: u64,
    pub nodes: u64,
    pub nodes_ready: u64,
    pub capacity: ResourcesDto,
    pub allocatable: ResourcesDto,
    pub requested: ResourcesDto,
    /// The highest version a synced cluster's API server reports (`v1.33.2`); none yet.
    pub newest_running: Option<String>,
    /// The newest minor version offered by a template or the configured minimum (`1.34`),
    /// which "behind" is measured against; none when nothing offers a version.
    pub newest_offered: Option<String>,
    /// SVG charts: by state, by provider, by version, CPU totals, memory totals.
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub state_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub provider_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub version_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub cpu_chart: String,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub memory_chart: String,
    /// The first clusters needing attention, and how many do.
    #[serde(serialize_with = "crate::hydrated::rows")]
    pub attention: Vec<AttentionDto>,
    pub attention_total: u64,
    /// Whether `rows` lists only the clusters needing attention.
    pub attention_only: bool,
    /// One page of the clusters, each with why it needs attention (empty: it does not).
    #[serde(serialize_with = "crate::hydrated::rows")]
    pub rows: Vec<AttentionDto>,
    /// How many clusters the page is of.
    pub total: u64,
    pub offset: u32,
    pub limit: u32,
    /// Tenants the caller may filter by; none when there are too many to choose from.
    pub tenants: Option<Vec<String>>,
    /// Operators: shared etcd per tenant with hosted clusters (empty for everyone else),
    /// and its chart (used and quota per tenant).
    pub storage: Vec<TenantStorageDto>,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub storage_chart: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageDto {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub namespace: String,
    pub workload: String,
    pub container: String,
    pub pods: u32,
    /// Since when this cluster runs the image, and when it was last seen there.
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageDto {
    pub image: String,
    pub registry: Option<String>,
    pub repository: Option<String>,
    pub tag: Option<String>,
    pub digest: Option<String>,
    pub clusters: u32,
    pub first_seen: String,
    pub usages: Vec<UsageDto>,
}

/// One image in one cluster: since when it runs there, when a sync last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageHistoryDto {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub image: String,
    pub digest: Option<String>,
    pub first_seen: String,
    pub last_seen: String,
    pub present: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionDto {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub api_version: Option<String>,
    pub synced: Option<String>,
    pub node: Option<String>,
    pub kubelet: Option<String>,
    pub runtime: Option<String>,
    pub os: Option<String>,
    pub ready: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRowDto {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub finding: FindingDto,
}

/// One page of a fleet query: its rows, the total and where the page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetListDto<T> {
    pub rows: Vec<T>,
    pub total: u64,
    pub offset: u32,
    pub limit: u32,
    /// Tenants the caller may filter by; none when there are too many to choose from.
    pub tenants: Option<Vec<String>>,
}

impl<T> FleetListDto<T> {
    /// The rows, and the page without them.
    pub fn split(self) -> (Vec<T>, FleetListDto<()>) {
        let FleetListDto {
            rows,
            total,
            offset,
            limit,
            tenants,
        } = self;
        let page = FleetListDto {
            rows: Vec::new(),
            total,
            offset,
            limit,
            tenants,
        };
        (rows, page)
    }
}

/// The findings page: a page of findings and the counts per severity and check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsPageDto {
    pub list: FleetListDto<FindingRowDto>,
    /// (severity, check, count), most severe first.
    pub counts: Vec<(String, String, u64)>,
    #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
    pub chart: String,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use leptos::server::codee::{Decoder, Encoder};

    use super::*;
    use crate::hydrated::{Hydrated, ScriptJson};

    /// Every field distinct, so that two swapped in the script form would not read back.
    fn row(n: u32, reasons: &[&str]) -> AttentionDto {
        AttentionDto {
            cluster: FleetClusterDto {
                id: format!("id-{n}"),
                name: format!("name-{n}"),
                tenant: format!("tenant-{n}"),
                state: "ready".into(),
                state_label: "Ready".into(),
                provider: "lab".into(),
                api_version: Some("v1.33.2".into()),
                nodes: 3 + n,
                nodes_ready: 2,
                allocatable: ResourcesDto {
                    cpu: "4 cores".into(),
                    memory: "16 GiB".into(),
                },
                requested: ResourcesDto {
                    cpu: "1 core".into(),
                    memory: "2 GiB".into(),
                },
                synced: Some("2026-12-01 10:00 UTC".into()),
                sync_error: Some("timed out".into()),
                etcd: Some("215 keys, 1.2 MiB".into()),
                etcd_read_only: n == 1,
            },
            reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    #[test]
    fn fleet_rows_travel_as_arrays_and_read_back_whole() {
        let rows = vec![row(1, &["never synced", "behind 1.34"]), row(2, &[])];
        let mut page = empty_page();
        page.attention = rows.clone();
        page.rows = rows.clone();
        let value: Result<Hydrated<FleetPageDto>, String> = Ok(Hydrated(page.clone()));
        let bytes = <ScriptJson as Encoder<_>>::encode(&value).unwrap();
        let json = String::from_utf8(bytes.clone()).unwrap();
        // The page's own totals keep their keys (`"cpu"`); the rows' are gone.
        for key in [
            "\"state_label\"",
            "\"etcd_read_only\"",
            "\"reasons\"",
            "\"cluster\"",
        ] {
            assert!(!json.contains(key), "{key} in {json}");
        }
        let back: Result<Hydrated<FleetPageDto>, String> =
            <ScriptJson as Decoder<_>>::decode(&bytes).unwrap();
        let back = back.unwrap().0;
        assert_eq!((back.attention, back.rows), (rows.clone(), rows));
        // The server function's answer keeps its keys.
        let plain = serde_json::to_string(&page).unwrap();
        assert!(plain.contains("\"state_label\":\"Ready\""), "{plain}");
        assert_eq!(serde_json::from_str::<FleetPageDto>(&plain).unwrap(), page);
    }

    /// An empty dashboard.
    fn empty_page() -> FleetPageDto {
        let none = ResourcesDto::default();
        FleetPageDto {
            clusters: 2,
            nodes: 0,
            nodes_ready: 0,
            capacity: none.clone(),
            allocatable: none.clone(),
            requested: none,
            newest_running: None,
            newest_offered: None,
            state_chart: String::new(),
            provider_chart: String::new(),
            version_chart: String::new(),
            cpu_chart: String::new(),
            memory_chart: String::new(),
            attention: Vec::new(),
            attention_total: 1,
            attention_only: false,
            rows: Vec::new(),
            total: 2,
            offset: 0,
            limit: 50,
            tenants: None,
            storage: Vec::new(),
            storage_chart: None,
        }
    }
}
