//! What the autoscaling section receives besides the API's own type.

/// The section's data: the API's answer and its chart, drawn on the server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AutoscalingDto {
    pub autoscaling: kqueen_dto::autoscaling::Autoscaling,
    /// The node counts over time as SVG.
    pub chart: String,
}
