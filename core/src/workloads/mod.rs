//! Objects KQueen applies to clusters: applications (versions side by side, each in its
//! namespace) and addons. Manifests are parsed with limits ([`manifest`]), placed and
//! labelled ([`resolve`], [`refs`]), compared with what runs ([`diff`]) and applied with
//! server-side apply as ApplySets ([`apply`]); [`status`] reads how the workloads are doing.

pub mod addons;
pub mod application;
pub mod apply;
pub mod diff;
mod errors;
pub mod manifest;
pub mod refs;
pub mod resolve;
pub mod status;

pub use errors::{api_error, WorkloadError};
