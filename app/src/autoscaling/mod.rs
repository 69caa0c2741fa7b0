//! Autoscaling in the portal: the cluster page's "Autoscaling" section: whether it is on,
//! its bounds and scale-down rule, the last decision in words, and a chart of the node
//! counts over the last seven days; operators and the tenant's admins turn it on, change it
//! and turn it off (a form that works without JavaScript).

pub mod actions;
mod dto;
mod section;
pub mod sfn;

pub use dto::AutoscalingDto;
pub use section::ClusterAutoscaling;
