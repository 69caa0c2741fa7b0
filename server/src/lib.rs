//! The `kqueen` binary's library: settings, telemetry, the axum application (portal pages,
//! server functions, health endpoints) and the command line.
//!
//! Tests start the real application with [`startup::build_state`] and [`startup::run`] on a
//! listener bound to port 0.

pub mod api;
pub mod auth;
pub mod cli;
pub mod csrf;
pub mod download;
pub mod error;
pub mod escape;
pub mod health;
pub mod metrics;
pub mod page_slots;
pub mod routes;
pub mod settings;
pub mod startup;
pub mod state;
pub mod telemetry;
