//! Page slots (`KQUEEN_PAGE_RENDERS`): past the bound a page load waits for a slot, counted on
//! `/metrics`, while everything that is not a page load is answered at once.

use std::io;
use std::time::Duration;

use prometheus_parse::{Scrape, Value};
use reqwest::StatusCode;
use serde_json::Value as Json;

use crate::helpers::TestApp;

/// The gauge `metric` of a scrape.
fn gauge(text: &str, metric: &str) -> Option<f64> {
    let scrape = Scrape::parse(text.lines().map(|l| io::Result::Ok(l.to_owned()))).unwrap();
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric)
        .and_then(|s| match s.value {
            Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

#[tokio::test]
async fn a_page_past_the_bound_waits_while_the_rest_is_answered() {
    let app = TestApp::spawn(kqueen_testkit::TestDatabase::sqlite(), |s, _| {
        s.page_renders = Some(1)
    })
    .await;
    app.seed_tenant("team-a", "Team Alpha").await;
    let op = app.user("root", true, &[]).await;
    let slots = app.state.page_slots.clone();
    assert_eq!(slots.size(), 1);

    // Someone else renders the one page this replica renders at once.
    let held = slots.take().await;
    let page = tokio::spawn({
        let (client, url) = (app.client.clone(), app.url.clone());
        async move {
            let res = client.get(format!("{url}/login")).send().await.unwrap();
            (res.status(), res.text().await.unwrap())
        }
    });
    let mut waited = 0;
    while slots.waiting().get() < 1 {
        assert!(waited < 500, "the page load never waited for a slot");
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
    }

    // Health, the API, a server function and the scrape do not wait for page slots.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    let res = app.get_as(&op, "/api/v1/tenants").await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = app.server_fn(&op, "tenants", &[("q", "alpha")]).await;
    assert_eq!(body[0]["slug"], Json::from("team-a"), "{body}");
    let res = app.get_as(&op, "/metrics").await;
    assert_eq!(res.status(), StatusCode::OK);
    let text = res.text().await.unwrap();
    assert_eq!(
        gauge(&text, "kqueen_page_render_slots"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(gauge(&text, "kqueen_page_renders"), Some(1.0), "{text}");
    assert_eq!(
        gauge(&text, "kqueen_page_renders_waiting"),
        Some(1.0),
        "{text}"
    );
    assert!(!page.is_finished(), "the page rendered without a slot");

    // The slot is free again: the waiting page renders.
    drop(held);
    let (status, html) = tokio::time::timeout(Duration::from_secs(30), page)
        .await
        .expect("the page renders once the slot is free")
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(r#"action="/auth/local""#), "{html}");
    assert_eq!((slots.rendering().get(), slots.waiting().get()), (0, 0));
    app.stop().await;
}

#[tokio::test]
async fn the_default_bound_follows_the_store() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let app = TestApp::sqlite().await;
    assert_eq!(app.state.page_slots.size(), 4 * cores, "SQLite");
    app.stop().await;
    let Some(app) = TestApp::postgres().await else {
        eprintln!("skipped the PostgreSQL half: KQUEEN_TEST_SKIP_POSTGRES is set");
        return;
    };
    assert_eq!(app.state.page_slots.size(), 16 * cores, "PostgreSQL");
    let op = app.user("root", true, &[]).await;
    let res = app.get_as(&op, "/metrics").await;
    let text = res.text().await.unwrap();
    assert_eq!(
        gauge(&text, "kqueen_page_render_slots"),
        Some((16 * cores) as f64),
        "{text}"
    );
    app.stop().await;
}
