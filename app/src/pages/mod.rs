//! One module per page.

mod admin;
mod audit;
pub(crate) mod clusters;
mod fleet;
pub(crate) mod inventory;
mod login;
mod not_found;
mod overview;
mod providers;
mod tenant;
mod tokens;

pub use admin::Admin;
pub use audit::Audit;
pub use clusters::{ClusterView, Clusters, NewCluster};
pub use fleet::{Fleet, FleetFindings, FleetImageHistory, FleetImages, FleetVersions};
pub use login::Login;
pub use not_found::NotFound;
pub use overview::Overview;
pub use providers::Providers;
pub use tenant::TenantPage;
pub use tokens::Tokens;
