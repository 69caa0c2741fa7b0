//! `loaded!`: a page's body once its resource has loaded, or the error it ended with.

/// A page body that waits for `resource` and renders it, or the error (the page using it
/// imports `ErrorNote`). `Either`, not `into_any`: erasing a view's type first converts all
/// of it into owned form (a table of 50 rows included: `into_owned` was 6 % of the cluster
/// list's instructions in callgrind).
macro_rules! loaded {
    ($resource:expr, $loading:literal, |$v:pat_param| $body:expr) => {
        view! {
            <Transition fallback=|| view! { <p class="muted">$loading</p> }>
                {move || Suspend::new(async move {
                    match $resource.await {
                        Ok($v) => leptos::either::Either::Left($body),
                        Err(e) => leptos::either::Either::Right(view! { <ErrorNote error=e /> }),
                    }
                })}
            </Transition>
        }
    };
}
