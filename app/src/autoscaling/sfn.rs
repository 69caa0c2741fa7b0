//! The autoscaling section's read: identify the caller, call one use case, send the API's
//! type and its chart.

use leptos::prelude::*;

use crate::AppError;

/// A cluster's autoscaling and its node counts over time: anyone who sees the cluster.
#[server(prefix = "/sfn", endpoint = "cluster_autoscaling")]
pub async fn cluster_autoscaling(id: String) -> Result<super::AutoscalingDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let view = k.autoscaler().view(&actor, &id).await?;
    let now = kqueen_core::clock::now();
    let bounds = view
        .autoscaling
        .as_ref()
        .map(|a| (a.settings.min_nodes, a.settings.max_nodes));
    let from = view
        .samples
        .first()
        .map_or(now - chrono::Duration::hours(1), |s| s.taken_at)
        .max(now - chrono::Duration::days(kqueen_core::autoscale::HISTORY_DAYS));
    let chart = kqueen_charts::autoscaling::node_count_chart(&view.samples, bounds, from, now);
    Ok(super::AutoscalingDto {
        autoscaling: view.into(),
        chart,
    })
}
