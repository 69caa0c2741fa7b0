//! Request latency by route: every request the router answers is timed, labelled by the
//! route it matched (its pattern, never the raw path, so that ids do not multiply the
//! series; requests no route matched, static files among them, are `unmatched`), its
//! method and its status.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// `route`, `method`, `status`.
pub type RequestLabels = Vec<(&'static str, String)>;

/// The request durations of this process, by route, method and status.
#[derive(Clone, Debug)]
pub struct HttpMetrics {
    pub(super) durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        Self {
            durations: Family::new_with_constructor(request_histogram),
        }
    }
}

/// 1 ms to ~16 s, doubling.
fn request_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

impl HttpMetrics {
    /// Records one answered request.
    pub fn observe(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let labels = vec![
            ("route", route.to_owned()),
            ("method", method.to_owned()),
            ("status", status.to_string()),
        ];
        self.durations.get_or_create(&labels).observe(seconds);
    }
}

/// A route pattern as a label: `/api/v1/clusters/{id}` reads `/api/v1/clusters/:id` (braces
/// inside label values trip simple exposition parsers and dashboard templates).
fn route_label(pattern: &str) -> String {
    pattern
        .split('/')
        .map(
            |part| match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => format!(":{}", name.trim_start_matches('*')),
                None => part.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// The middleware that times every request (outside the routes, so refusals count too).
pub async fn track(State(http): State<HttpMetrics>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| route_label(p.as_str()));
    let method = req.method().as_str().to_owned();
    let response = next.run(req).await;
    http.observe(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::route_label;

    #[test]
    fn route_patterns_read_with_colons() {
        assert_eq!(route_label("/api/v1/clusters/{id}"), "/api/v1/clusters/:id");
        assert_eq!(
            route_label("/api/v1/clusters/{id}/apps/{app}"),
            "/api/v1/clusters/:id/apps/:app"
        );
        assert_eq!(route_label("/pkg/{*path}"), "/pkg/:path");
        assert_eq!(route_label("/metrics"), "/metrics");
    }
}
