//! The page for unknown paths, served with status 404.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found" />
        <h1>"Page not found"</h1>
        <p>"There is nothing at this address. " <A href="/">"Back to the overview"</A></p>
    }
}
