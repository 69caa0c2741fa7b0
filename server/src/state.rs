//! The application state every handler, server function and middleware receives.

use std::sync::Arc;

use axum::extract::FromRef;
use kqueen_core::Kqueen;
use leptos::config::LeptosOptions;

use crate::auth::AuthState;

/// Everything a request handler may need. Every middleware layer and handler clones the
/// state for every request: one reference count, whatever it holds.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

impl AppState {
    /// The state around `shared`.
    pub fn new(shared: SharedState) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = SharedState;
    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for Kqueen {
    fn from_ref(state: &AppState) -> Self {
        state.kqueen.clone()
    }
}

impl FromRef<AppState> for AuthState {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

impl FromRef<AppState> for crate::page_slots::PageSlots {
    fn from_ref(state: &AppState) -> Self {
        state.page_slots.clone()
    }
}

impl FromRef<AppState> for crate::metrics::HttpMetrics {
    fn from_ref(state: &AppState) -> Self {
        state.http_metrics.clone()
    }
}

/// What [`AppState`] shares.
pub struct SharedState {
    pub leptos_options: LeptosOptions,
    pub kqueen: Kqueen,
    /// Login, sessions and the identity provider.
    pub auth: AuthState,
    /// How often this process syncs the inventory when it runs workers; none: never.
    pub inventory_every: Option<std::time::Duration>,
    /// This process's request latencies (`/metrics`).
    pub http_metrics: crate::metrics::HttpMetrics,
    /// How many pages render at once, and who waits.
    pub page_slots: crate::page_slots::PageSlots,
}
