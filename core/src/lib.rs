//! KQueen's domain: tenants, users and the audit trail, the use cases that act on them, and
//! the store that keeps them (the only place SQL lives).
//!
//! The web layers (`kqueen-app`, `kqueen-server`) stay thin: they authenticate, call one use
//! case of [`Kqueen`], and map the result to a page, a server-function answer or JSON.

pub mod actor;
pub mod approval;
pub mod audit;
pub mod autoscale;
pub mod backup;
pub mod clock;
pub mod cluster;
pub mod counter;
pub mod deps;
mod dto;
pub mod engine;
mod error;
pub mod export;
pub mod hosted;
pub mod identity;
pub mod inventory;
pub mod invite;
pub mod kubernetes;
pub mod page;
pub mod periodic;
pub mod policy;
pub mod provisioner;
pub mod replica;
pub mod rollout;
pub mod secret;
mod service;
pub mod store;
pub mod tenant;
pub mod token;
pub mod user;
pub mod vault;
pub mod workloads;

pub use actor::Actor;
pub use error::{Error, ErrorKind, PublicError, Result, ValidationError};
pub use service::{
    Addons, AdoptRequest, AppStatus, ApprovalInput, Approvals, Apps, Attention, Autoscaler,
    AutoscalingView, BackupArchive, BackupOptions, BackupRef, Backups, BulkOutcome,
    ClusterAddonView, ClusterCredential, ClusterDetail, ClusterSettings, ClusterSync,
    DeployPreview, DeployRequest, ExternalLogin, FleetMetrics, FleetOverview, FleetTotals,
    ImageRow, InventorySettings, KindInfo, Kqueen, KubeconfigDownload, Overview, RestorePlan,
    RestoreRequest, RolloutInput, RolloutView, Rollouts, Tally, TemplateView, Users,
    ATTENTION_SHOWN,
};
