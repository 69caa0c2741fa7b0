//! `/`: the operators' first-run checklist while something is not set up, figures of the
//! installation (operators), and the tenant list with a filter.
//!
//! Without JavaScript the filter is a GET form (`/?q=…`). Hydrated, typing updates the URL
//! in place and the list follows, with no page load.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::NavigateOptions;

use super::checklist::{FirstRun, NoTenantNote};
use crate::components::{encode_query_value, ErrorNote, Stat, TableHead};
use crate::tenants::dto::Tenant;

#[component]
pub fn Overview() -> impl IntoView {
    let query = use_query_map();
    let q = move || query.read().get("q").unwrap_or_default();
    let stats = crate::hydrated::resource(|| (), |_| crate::overview::sfn::overview());
    let tenants = crate::hydrated::resource(q, |q| crate::tenants::sfn::list_tenants(Some(q)));

    let navigate = use_navigate();
    let on_input = move |ev| {
        let value = event_target_value(&ev);
        let url = if value.is_empty() {
            "/".to_owned()
        } else {
            format!("/?q={}", encode_query_value(&value))
        };
        navigate(
            &url,
            NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };

    view! {
        <Title text="Overview" />
        <h1>"Overview"</h1>
        <Suspense fallback=|| view! { <p class="muted">"Loading figures…"</p> }>
            {move || Suspend::new(async move {
                match stats.await {
                    Ok(s) => {
                        let n = |v: Option<u64>| v.map(|v| v.to_string());
                        view! {
                            {s.setup.map(|setup| view! { <FirstRun setup /> })}
                            {s.operator.then(|| view! {
                                <section class="stats" aria-label="Figures">
                                    {n(s.tenants).map(|v| view! { <Stat label="Tenants" value=v /> })}
                                    {n(s.users).map(|v| view! { <Stat label="Users" value=v /> })}
                                    {n(s.audit_events).map(|v| view! { <Stat label="Audit events" value=v /> })}
                                    {s.database.map(|d| view! { <Stat label="Database" value=d /> })}
                                </section>
                            })}
                        }.into_any()
                    }
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>

        <section class="card" aria-labelledby="tenants-heading">
            <div class="card-head">
                <h2 id="tenants-heading">"Tenants"</h2>
                <form method="get" action="/" role="search" class="filter">
                    <label for="tenant-filter" class="visually-hidden">"Filter tenants"</label>
                    <input
                        id="tenant-filter"
                        type="search"
                        name="q"
                        placeholder="Filter by name"
                        autocomplete="off"
                        maxlength="100"
                        value=q
                        on:input=on_input
                    />
                    <button type="submit">"Filter"</button>
                </form>
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading tenants…"</p> }>
                {move || Suspend::new(async move {
                    let operator = matches!(stats.await, Ok(s) if s.operator);
                    match tenants.await {
                        Ok(list) => view! { <TenantTable tenants=list filtered=!q().is_empty() operator /> }.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn TenantTable(tenants: Vec<Tenant>, filtered: bool, operator: bool) -> impl IntoView {
    if tenants.is_empty() {
        let text = if filtered {
            view! { <p class="empty" id="tenant-empty">"No tenant matches this filter."</p> }
                .into_any()
        } else {
            view! { <div id="tenant-empty"><NoTenantNote operator /></div> }.into_any()
        };
        return text;
    }
    let count = tenants.len();
    view! {
        <table class="table" id="tenant-table">
            <caption class="visually-hidden">"Tenants"</caption>
            <TableHead cols=vec!["Slug", "Name", "Created (UTC)"] />
            <tbody>
                {tenants
                    .into_iter()
                    .map(|t| {
                        let slug = t.slug.clone();
                        view! {
                            <tr data-tenant=slug>
                                <td><A href=format!("/tenants/{}", t.slug)><code>{t.slug.clone()}</code></A></td>
                                <td>{t.display_name}</td>
                                <td>{crate::time::to_minute(&t.created_at)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        <p class="muted" id="tenant-count">{format!("{count} shown")}</p>
    }
    .into_any()
}
