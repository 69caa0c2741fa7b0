//! `GET /metrics`: this process's request latencies and the fleet's figures in the
//! OpenMetrics text format, for Prometheus (operators only: scrape with an operator's API
//! token). The fleet's figures are read from the database at each scrape, so every replica
//! answers the same; request latencies are this replica's.

pub mod http;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use kqueen_core::{Actor, FleetMetrics, Kqueen};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::{error_response, status_of};
use crate::page_slots::PageSlots;

pub use http::HttpMetrics;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(&'static str, String)>;

/// The scrape; refusals in the API's error shape.
pub async fn metrics(
    State(kqueen): State<Kqueen>,
    State(http): State<HttpMetrics>,
    State(pages): State<PageSlots>,
    Extension(actor): Extension<Actor>,
) -> Response {
    match kqueen.fleet().metrics(&actor).await {
        Ok(fleet) => {
            let text = render(&fleet, &http, &pages);
            (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
        }
        Err(e) => {
            let public = e.public();
            error_response(status_of(public.kind), &public.message)
        }
    }
}

/// The OpenMetrics text of `fleet`, `http` and `pages`.
pub fn render(fleet: &FleetMetrics, http: &HttpMetrics, pages: &PageSlots) -> String {
    let mut registry = Registry::with_prefix("kqueen");
    registry.register(
        "http_request_duration_seconds",
        "Time to answer a request, by route pattern, method and status",
        http.durations.clone(),
    );
    registry.register(
        "page_renders",
        "Page loads of this replica rendering now (each holds a page slot)",
        pages.rendering().clone(),
    );
    registry.register(
        "page_renders_waiting",
        "Page loads of this replica waiting for a page slot",
        pages.waiting().clone(),
    );
    let slots = Gauge::<i64>::default();
    slots.set(i64::try_from(pages.size()).unwrap_or(i64::MAX));
    registry.register(
        "page_render_slots",
        "Page loads this replica renders at once (KQUEEN_PAGE_RENDERS)",
        slots,
    );
    let gauge = |registry: &mut Registry, name: &str, help: &str| {
        let family = Family::<Labels, Gauge>::default();
        registry.register(name, help, family.clone());
        family
    };
    let clusters = gauge(
        &mut registry,
        "clusters",
        "Live clusters by state and provider",
    );
    let operations = gauge(&mut registry, "operations", "Operations by kind and state");
    let nodes = gauge(
        &mut registry,
        "cluster_nodes",
        "Nodes of a cluster, as last synced",
    );
    let ready = gauge(
        &mut registry,
        "cluster_nodes_ready",
        "Ready nodes of a cluster, as last synced",
    );
    let sync_error = gauge(
        &mut registry,
        "cluster_inventory_sync_failing",
        "1 when the cluster's last inventory sync failed",
    );
    let synced = gauge(
        &mut registry,
        "cluster_inventory_synced_timestamp_seconds",
        "When the cluster's inventory last synced (Unix time)",
    );
    let storage_bytes = gauge(
        &mut registry,
        "shared_storage_bytes",
        "Keys plus values a hosted control plane keeps in the shared etcd, as last measured",
    );
    let storage_keys = gauge(
        &mut registry,
        "shared_storage_keys",
        "Keys a hosted control plane keeps in the shared etcd, as last measured",
    );
    let writable = gauge(
        &mut registry,
        "shared_storage_writable",
        "0 when a hosted control plane is read-only in the shared etcd (over its quota)",
    );
    for c in &fleet.clusters {
        let by = vec![
            ("state", c.state.as_str().to_owned()),
            ("provider", c.provider.clone()),
        ];
        clusters.get_or_create(&by).inc();
        let one = vec![("tenant", c.tenant.clone()), ("cluster", c.name.clone())];
        nodes.get_or_create(&one).set(i64::from(c.nodes));
        ready.get_or_create(&one).set(i64::from(c.nodes_ready));
        if c.attempted_at.is_some() {
            sync_error
                .get_or_create(&one)
                .set(i64::from(c.sync_error.is_some()));
        }
        if let Some(at) = c.synced_at {
            synced.get_or_create(&one).set(at.timestamp());
        }
        if let Some(s) = &c.shared_storage {
            let bytes = i64::try_from(s.usage.bytes).unwrap_or(i64::MAX);
            let keys = i64::try_from(s.usage.keys).unwrap_or(i64::MAX);
            storage_bytes.get_or_create(&one).set(bytes);
            storage_keys.get_or_create(&one).set(keys);
            writable
                .get_or_create(&one)
                .set(i64::from(s.usage.writable));
        }
    }
    for (kind, state, n) in &fleet.operations {
        let by = vec![
            ("kind", kind.as_str().to_owned()),
            ("state", state.as_str().to_owned()),
        ];
        operations
            .get_or_create(&by)
            .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    let counter = |registry: &mut Registry, name: &str, help: &str| {
        let family = Family::<Labels, Counter>::default();
        registry.register(name, help, family.clone());
        family
    };
    let result = |ok: bool| ("result", if ok { "ok" } else { "failed" }.to_owned());
    let syncs = counter(
        &mut registry,
        "inventory_syncs",
        "Inventory syncs this replica ran, by result",
    );
    for (ok, n) in [
        (true, fleet.inventory_syncs.ok),
        (false, fleet.inventory_syncs.failed),
    ] {
        syncs.get_or_create(&vec![result(ok)]).inc_by(n);
    }
    let vault = counter(
        &mut registry,
        "vault_operations",
        "Secrets this replica sealed (put), opened (get) and deleted, by result",
    );
    let v = &fleet.vault;
    for (op, outcomes) in [("put", v.put), ("get", v.get), ("delete", v.delete)] {
        for (ok, n) in [(true, outcomes.ok), (false, outcomes.failed)] {
            vault
                .get_or_create(&vec![("op", op.to_owned()), result(ok)])
                .inc_by(n);
        }
    }
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io;

    use chrono::Utc;
    use kqueen_core::cluster::{ClusterState, OperationKind, OperationState};
    use kqueen_core::counter::Outcomes;
    use kqueen_core::inventory::fleet::FleetCluster;
    use kqueen_core::provisioner::{SharedStorage, SharedStorageReading};
    use kqueen_core::vault::VaultCounts;
    use kqueen_core::FleetMetrics;
    use prometheus_parse::Scrape;

    use super::{render, HttpMetrics, PageSlots};

    /// A hosted cluster whose inventory synced, and one whose sync fails.
    fn fleet() -> FleetMetrics {
        let cluster = |name: &str, synced: bool| FleetCluster {
            id: uuid::Uuid::nil(),
            name: name.into(),
            tenant: "team-a".into(),
            state: ClusterState::Ready,
            provider: "lab".into(),
            error: None,
            attempted_at: Some(Utc::now()),
            synced_at: synced.then(Utc::now),
            sync_error: (!synced).then(|| "unreachable".to_owned()),
            api_version: None,
            nodes: 3,
            nodes_ready: 2,
            not_ready_since: None,
            capacity: Default::default(),
            allocatable: Default::default(),
            requested: Default::default(),
            used: None,
            shared_storage: Some(SharedStorageReading {
                usage: SharedStorage {
                    keys: 420,
                    bytes: 1 << 20,
                    writable: true,
                },
                measured_at: Utc::now(),
            }),
        };
        FleetMetrics {
            clusters: vec![cluster("dev", true), cluster("prod", false)],
            operations: vec![(OperationKind::Create, OperationState::Succeeded, 2)],
            inventory_syncs: Outcomes { ok: 7, failed: 1 },
            vault: VaultCounts {
                get: Outcomes { ok: 12, failed: 0 },
                ..VaultCounts::default()
            },
        }
    }

    fn scrape(text: &str) -> Scrape {
        Scrape::parse(text.lines().map(|l| io::Result::Ok(l.to_owned()))).unwrap()
    }

    #[test]
    fn every_cluster_figure_is_rendered_per_cluster() {
        let http = HttpMetrics::default();
        http.observe("/api/v1/clusters", "GET", 200, 0.004);
        let text = render(&fleet(), &http, &PageSlots::new(8));
        assert!(text.ends_with("# EOF\n"), "{text}");
        for line in [
            r#"kqueen_clusters{state="ready",provider="lab"} 2"#,
            r#"kqueen_cluster_nodes_ready{tenant="team-a",cluster="dev"} 2"#,
            r#"kqueen_cluster_inventory_sync_failing{tenant="team-a",cluster="prod"} 1"#,
            r#"kqueen_cluster_inventory_sync_failing{tenant="team-a",cluster="dev"} 0"#,
            r#"kqueen_shared_storage_bytes{tenant="team-a",cluster="dev"} 1048576"#,
            r#"kqueen_shared_storage_writable{tenant="team-a",cluster="dev"} 1"#,
            r#"kqueen_inventory_syncs_total{result="ok"} 7"#,
            r#"kqueen_inventory_syncs_total{result="failed"} 1"#,
            r#"kqueen_vault_operations_total{op="get",result="ok"} 12"#,
            r#"kqueen_vault_operations_total{op="put",result="failed"} 0"#,
            r#"kqueen_operations{kind="create",state="succeeded"} 2"#,
            "kqueen_page_render_slots 8",
            "kqueen_page_renders 0",
            "kqueen_page_renders_waiting 0",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        assert!(
            !text.contains(r#"kqueen_cluster_inventory_synced_timestamp_seconds{tenant="team-a",cluster="prod"}"#),
            "never synced: no time"
        );
    }

    /// The Grafana dashboard in the repository asks only for metrics KQueen renders.
    #[test]
    fn the_dashboard_reads_only_what_metrics_renders() {
        let http = HttpMetrics::default();
        http.observe("/api/v1/clusters", "GET", 200, 0.004);
        let s = scrape(&render(&fleet(), &http, &PageSlots::new(8)));
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/grafana/kqueen.json");
        let dashboard: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut asked = 0;
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                for name in metric_names(expr) {
                    let base = ["_bucket", "_count", "_sum", "_total"]
                        .iter()
                        .find_map(|suffix| name.strip_suffix(suffix))
                        .filter(|b| s.docs.contains_key(*b))
                        .unwrap_or(&name);
                    assert!(s.docs.contains_key(base), "{expr}: {name} is not rendered");
                    asked += 1;
                }
            }
        }
        assert!(asked >= 12, "{asked}");
    }

    /// The `kqueen_…` metric names a PromQL expression reads.
    fn metric_names(expr: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = expr;
        while let Some(at) = rest.find("kqueen_") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(tail.len());
            names.push(tail[..end].to_owned());
            rest = &tail[end..];
        }
        names
    }
}
