//! Integration tests of the real server on port 0 (one test binary, helpers in helpers.rs).

#![allow(clippy::unwrap_used)]

mod access;
mod access_sweep;
mod addons;
mod approvals;
mod apps;
mod autoscaling;
mod autoscaling_nodes;
mod backups;
mod binary;
mod cli;
mod cluster_api;
mod clusters;
mod contract;
mod device_login;
mod fleet;
mod helpers;
mod hosted;
mod hosted_backups;
mod metrics;
mod oidc;
mod openapi;
mod page_slots;
mod portal;
mod provider;
mod real_cluster;
mod replace_node;
mod replicas;
mod rollouts;
mod same_types;
mod server_fns;
mod users;
