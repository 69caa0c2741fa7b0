//! KQueen's portal: pages (server-rendered, then hydrated by the `kqueen-frontend` wasm) and
//! the server functions they call. Server functions are adapters: they take the request's
//! identity, call one use case of `kqueen_core::Kqueen`, and map the result to a DTO.
//!
//! Every page works without JavaScript: lists filter through GET forms, writes are server
//! functions behind `ActionForm` (a plain form post answered by a redirect), and routes render
//! with `SsrMode::Async`, so the HTML arrives complete.

// Deep view types (pages of many sections) exceed the default 128 when the hydrate build
// computes their layouts; Leptos suggests raising it.
#![recursion_limit = "256"]

// First: the pages below use its macro.
#[macro_use]
mod loaded;

pub mod account;
pub mod addons;
pub mod approvals;
pub mod apps;
pub mod audit;
pub mod autoscaling;
pub mod backups;
pub mod clusters;
mod components;
mod context;
mod error;
pub mod fleet;
mod hydrated;
pub mod kept;
mod not_found;
pub mod overview;
pub mod providers;
mod query;
pub mod rollouts;
pub mod schema_form;
mod shell;
#[cfg(feature = "ssr")]
mod ssr;

/// Where the portal sends the browser after a write or a download (the server's kubeconfig
/// route answers the same way as the pages' writes).
#[cfg(feature = "ssr")]
pub use ssr::back_to;
pub mod tenants;
mod time;
pub mod users;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

pub use error::AppError;

/// File name (without extension) of the wasm bundle and the stylesheet under `/pkg`.
pub const OUTPUT_NAME: &str = "kqueen";

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The portal: app shell with navigation around the routed pages.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="kqueen" href=format!("/pkg/{OUTPUT_NAME}.css") />
        <Title formatter=|page: String| format!("{page} · KQueen") />
        <Router>
            <shell::AppShell>
                <Routes fallback=not_found::NotFound>
                    <Route path=path!("/") view=overview::Overview ssr=SsrMode::Async />
                    <Route path=path!("/login") view=account::Login ssr=SsrMode::Async />
                    <Route path=path!("/tenants/:slug") view=tenants::TenantPage ssr=SsrMode::Async />
                    <Route path=path!("/tokens") view=account::Tokens ssr=SsrMode::Async />
                    <Route path=path!("/admin") view=tenants::Admin ssr=SsrMode::Async />
                    <Route path=path!("/admin/users") view=users::Users ssr=SsrMode::Async />
                    <Route path=path!("/invite/:token") view=users::AcceptInvite ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=audit::Audit ssr=SsrMode::Async />
                    <Route path=path!("/clusters") view=clusters::Clusters ssr=SsrMode::Async />
                    <Route path=path!("/clusters/new") view=clusters::NewCluster ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id") view=clusters::ClusterView ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id/join") view=clusters::ClusterJoin ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id/apps/new") view=apps::NewApp ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id/apps/preview") view=apps::AppPreview ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id/apps/:app") view=apps::AppVersion ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id/backups/:backup/restore") view=backups::BackupRestore ssr=SsrMode::Async />
                    <Route path=path!("/backups") view=backups::AllBackups ssr=SsrMode::Async />
                    <Route path=path!("/approvals") view=approvals::PendingApprovals ssr=SsrMode::Async />
                    <Route path=path!("/rollouts") view=rollouts::Rollouts ssr=SsrMode::Async />
                    <Route path=path!("/rollouts/:id") view=rollouts::RolloutView ssr=SsrMode::Async />
                    <Route path=path!("/backups/:backup/restore") view=backups::BackupRestore ssr=SsrMode::Async />
                    <Route path=path!("/providers") view=providers::Providers ssr=SsrMode::Async />
                    <Route path=path!("/providers/:name/clusters") view=providers::ProviderClusters ssr=SsrMode::Async />
                    <Route path=path!("/addons") view=addons::AddonCatalog ssr=SsrMode::Async />
                    <Route path=path!("/fleet") view=fleet::Fleet ssr=SsrMode::Async />
                    <Route path=path!("/fleet/images") view=fleet::FleetImages ssr=SsrMode::Async />
                    <Route path=path!("/fleet/images/history") view=fleet::FleetImageHistory ssr=SsrMode::Async />
                    <Route path=path!("/fleet/versions") view=fleet::FleetVersions ssr=SsrMode::Async />
                    <Route path=path!("/fleet/findings") view=fleet::FleetFindings ssr=SsrMode::Async />
                    <Route path=path!("/fleet/addons") view=addons::FleetAddons ssr=SsrMode::Async />
                </Routes>
            </shell::AppShell>
        </Router>
    }
}
