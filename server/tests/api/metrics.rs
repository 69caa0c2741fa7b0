//! `GET /metrics`: what a Prometheus scrape reads, parsed with a Prometheus text parser:
//! request latencies by route pattern, the fleet's clusters by state and provider, each
//! cluster's nodes and inventory sync, operations by kind and state, this replica's inventory
//! syncs and vault operations. Operators only.

use std::io;

use prometheus_parse::{Sample, Scrape, Value};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::clusters::{call, define, installer, wait_for_state};
use crate::helpers::TestApp;

fn scrape(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| io::Result::Ok(l.to_owned()))).unwrap()
}

/// The value of the sample `metric` whose labels include `labels`.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let matches =
        |s: &&Sample| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v));
    scrape.samples.iter().find(matches).map(|s| match &s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(buckets) => buckets.iter().map(|b| b.count).fold(0.0, f64::max),
        Value::Summary(_) => f64::NAN,
    })
}

#[tokio::test]
async fn a_scrape_reads_request_latencies_clusters_and_operations() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "admin")]).await;
    let scripts = tempfile::tempdir().unwrap();
    let provider = json!({"name": "lab", "kind": "command",
        "settings": {"create_command": installer(scripts.path()), "timeout_seconds": 60}});
    define(
        &app,
        &olga,
        provider,
        json!({"name": "small", "provider": "lab"}),
    )
    .await;
    let request = json!({"tenant": "team-a", "name": "dev", "template": "small",
        "parameters": {"node_count": 2}});
    let (status, body) = call(&amy, &app, Method::POST, "/api/v1/clusters", Some(request)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &amy, &id, "ready").await;

    // One inventory sync, requested (its result depends on the installer's fake cluster).
    let sync = format!("/api/v1/clusters/{id}/inventory/sync");
    call(&amy, &app, Method::POST, &sync, None).await;

    // Who may scrape: operators (a member's token or session is refused, nobody is asked
    // to log in).
    let (status, _) = call(&amy, &app, Method::GET, "/metrics", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let nobody = reqwest::Client::new();
    let (status, _) = call(&nobody, &app, Method::GET, "/metrics", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let res = olga
        .get(format!("{}/metrics", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let kind = res.headers()[reqwest::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = res.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let s = scrape(&text);
    let ready = [("state", "ready"), ("provider", "lab")];
    assert_eq!(value(&s, "kqueen_clusters", &ready), Some(1.0), "{text}");
    let created = [("kind", "create"), ("state", "succeeded")];
    assert_eq!(
        value(&s, "kqueen_operations", &created),
        Some(1.0),
        "{text}"
    );
    // Requests by route pattern: the cluster's page counts under /api/v1/clusters/:id,
    // never under its id.
    let polled = [
        ("route", "/api/v1/clusters/:id"),
        ("method", "GET"),
        ("status", "200"),
    ];
    let count = value(&s, "kqueen_http_request_duration_seconds_count", &polled);
    assert!(count.is_some_and(|n| n >= 1.0), "{text}");
    assert!(!text.contains(&id), "no series per id: {text}");
    let refused = [("route", "/metrics"), ("status", "403")];
    let count = value(&s, "kqueen_http_request_duration_seconds_count", &refused);
    assert_eq!(count, Some(1.0), "{text}");
    // This replica's own work: the stored kubeconfig was sealed, the sync counted.
    let sealed = value(
        &s,
        "kqueen_vault_operations_total",
        &[("op", "put"), ("result", "ok")],
    );
    assert!(sealed.is_some_and(|n| n >= 1.0), "{text}");
    let synced: f64 = ["ok", "failed"]
        .iter()
        .filter_map(|r| value(&s, "kqueen_inventory_syncs_total", &[("result", r)]))
        .sum();
    assert!(synced >= 1.0, "{text}");
    // Every metric is documented.
    for name in [
        "kqueen_clusters",
        "kqueen_operations",
        "kqueen_http_request_duration_seconds",
        "kqueen_inventory_syncs",
        "kqueen_vault_operations",
    ] {
        assert!(s.docs.contains_key(name), "{name}: {:?}", s.docs.keys());
    }
    app.stop().await;
}
