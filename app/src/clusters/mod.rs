//! Clusters: the list, the request form and the cluster page. Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
pub mod dto;
pub mod join;
mod list;
mod listed;
pub(crate) mod request;
pub mod sfn;
mod view;

pub use join::ClusterJoin;
pub use list::Clusters;
pub use request::NewCluster;
pub use view::ClusterView;
