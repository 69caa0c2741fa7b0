//! Clusters: the list, the request form and the cluster page. Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
pub mod dto;
pub(crate) mod page;
pub mod sfn;

pub use page::{ClusterView, Clusters, NewCluster};
