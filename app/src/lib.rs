//! KQueen's portal: pages (server-rendered, then hydrated by the `kqueen-frontend` wasm) and
//! the server functions they call. Server functions are adapters: they take the request's
//! identity, call one use case of `kqueen_core::Kqueen`, and map the result to a DTO.
//!
//! Every page works without JavaScript: lists filter through GET forms, and routes render
//! with `SsrMode::Async`, so the HTML arrives complete.

pub mod api;
pub mod api_clusters;
pub mod api_fleet;
mod components;
pub mod dto;
pub mod dto_fleet;
mod error;
mod pages;
mod query;

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
            <components::AppShell>
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::Overview ssr=SsrMode::Async />
                    <Route path=path!("/login") view=pages::Login ssr=SsrMode::Async />
                    <Route path=path!("/tenants/:slug") view=pages::TenantPage ssr=SsrMode::Async />
                    <Route path=path!("/tokens") view=pages::Tokens ssr=SsrMode::Async />
                    <Route path=path!("/admin") view=pages::Admin ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=pages::Audit ssr=SsrMode::Async />
                    <Route path=path!("/clusters") view=pages::Clusters ssr=SsrMode::Async />
                    <Route path=path!("/clusters/new") view=pages::NewCluster ssr=SsrMode::Async />
                    <Route path=path!("/clusters/:id") view=pages::ClusterView ssr=SsrMode::Async />
                    <Route path=path!("/providers") view=pages::Providers ssr=SsrMode::Async />
                    <Route path=path!("/fleet") view=pages::Fleet ssr=SsrMode::Async />
                    <Route path=path!("/fleet/images") view=pages::FleetImages ssr=SsrMode::Async />
                    <Route path=path!("/fleet/images/history") view=pages::FleetImageHistory ssr=SsrMode::Async />
                    <Route path=path!("/fleet/versions") view=pages::FleetVersions ssr=SsrMode::Async />
                    <Route path=path!("/fleet/findings") view=pages::FleetFindings ssr=SsrMode::Async />
                </Routes>
            </components::AppShell>
        </Router>
    }
}
