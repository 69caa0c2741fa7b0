//! The operators' first-run checklist, and what someone with no tenant is told instead.

use leptos::prelude::*;

use crate::overview::dto::SetupDto;

/// What is left to set up, each step with a link and a done mark computed from the data;
/// nothing once every step is done.
#[component]
pub fn FirstRun(setup: SetupDto) -> impl IntoView {
    if setup.complete() {
        return ().into_any();
    }
    let steps = setup.steps();
    let left = steps.iter().filter(|s| !s.done).count();
    view! {
        <section class="card checklist" id="first-run" aria-labelledby="first-run-heading">
            <div class="card-head">
                <h2 id="first-run-heading">"Set up KQueen"</h2>
                <span class="muted" id="first-run-left">{format!("{left} of {} left", steps.len())}</span>
            </div>
            <p class="muted">"Until these are done, nobody can request a cluster here. This list goes away when all are done."</p>
            <ol class="steps">
                {steps.into_iter().map(|s| view! {
                    <li data-step=s.key data-done=s.done.to_string() class=if s.done { "step done" } else { "step" }>
                        <span class="mark" aria-hidden="true">{if s.done { "✓" } else { "○" }}</span>
                        <span class="visually-hidden">{if s.done { "Done: " } else { "To do: " }}</span>
                        <strong>{s.title}</strong>
                        " — " <a href=s.href>{s.link}</a>
                        <br /><small class="muted">{s.why}</small>
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

/// Why a list of tenants is empty, in words for who is reading: operators create tenants;
/// everyone else is added to one.
#[component]
pub fn NoTenantNote(operator: bool) -> impl IntoView {
    if operator {
        view! {
            <p class="empty" id="no-tenant">
                "There are no tenants yet. Create one on the " <a href="/admin">"Admin"</a>
                " page, then add people to it."
            </p>
        }
        .into_any()
    } else {
        view! {
            <p class="empty" id="no-tenant">
                "You belong to no tenant yet, so there is nothing to see or request here. "
                "An operator, or an admin of a tenant, adds you to a tenant (your identity "
                "provider's groups may do it too, at your next sign-in). Ask your operator."
            </p>
        }
        .into_any()
    }
}

/// [`NoTenantNote`] for whoever is signed in (read from the app shell).
#[component]
pub fn NoTenantHelp() -> impl IntoView {
    let me = crate::context::get::<crate::shell::Me>();
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let operator = match me {
                    Some(me) => matches!(me.0.await, Ok(Some(u)) if u.operator),
                    None => false,
                };
                view! { <NoTenantNote operator /> }
            })}
        </Suspense>
    }
}
