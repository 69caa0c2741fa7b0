//! The page for unknown paths, served with status 404, and the same status for pages whose
//! subject does not exist.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::AppError;

#[component]
pub fn NotFound() -> impl IntoView {
    set_not_found();
    view! {
        <Title text="Not found" />
        <h1>"Page not found"</h1>
        <p>"There is nothing at this address. " <A href="/">"Back to the overview"</A></p>
    }
}

/// Answers the page with status 404 (on the server; nothing in the browser).
fn set_not_found() {
    #[cfg(feature = "ssr")]
    if let Some(response) = crate::context::get::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
}

/// A page whose subject could not be loaded answers with the status that says why: 404 for
/// "not found" (an unknown cluster or tenant; what the caller may not see is not found too).
pub fn status_for(error: &AppError) {
    if matches!(error, AppError::NotFound(_)) {
        set_not_found();
    }
}
