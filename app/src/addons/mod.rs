//! Addons in the portal: the cluster page's "Addons" section (every catalog addon with its
//! state, and the toggle), the fleet's `/fleet/addons` (which version runs where, and the
//! operators' bulk upgrade), and the operators' catalog `/addons`.
//!
//! Each install, upgrade and removal is a durable operation of the cluster (its progress and
//! events are on the cluster page) with an audit entry, made by the core's use cases; the
//! server functions here only adapt them.

pub mod actions;
#[cfg(feature = "ssr")]
mod bulk;
mod catalog;
pub mod dto;
mod fleet;
mod section;
pub mod sfn;

pub use catalog::AddonCatalog;
pub use fleet::FleetAddons;
pub use section::ClusterAddons;
