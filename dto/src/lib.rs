//! One transfer type per domain type where the REST API and the portal send the same shape:
//! the server's `/api/v1` answers with it and the portal's server functions hand it to the
//! pages, so the two cannot drift apart; the command line reads the same types. Plain data (times as RFC 3339 strings), no
//! dependency on the domain crate, so that the wasm portal can use it; `kqueen-core` fills
//! them (`From` its types).

pub mod addons;
pub mod adopt;
pub mod approvals;
pub mod apps;
pub mod audit;
pub mod autoscaling;
pub mod backups;
pub mod clusters;
pub mod credentials;
pub mod kinds;
pub mod params;
pub mod providers;
pub mod rollouts;
pub mod tenants;
pub mod tokens;
pub mod users;
