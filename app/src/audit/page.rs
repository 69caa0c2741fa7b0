//! `/audit`: the audit trail, newest first, filtered by tenant, actor, action and time, paged,
//! exportable as CSV. Operators see everything, tenant admins their tenants' events.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::audit::dto::{AuditFilter, AuditPageDto};
use crate::components::{encode_query_value, ErrorNote, TableHead};

fn filter_query(f: &AuditFilter) -> String {
    [
        ("tenant", &f.tenant),
        ("actor", &f.actor),
        ("action", &f.action),
        ("since", &f.since),
        ("until", &f.until),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| format!("{k}={}", encode_query_value(v)))
    .collect::<Vec<_>>()
    .join("&")
}

#[component]
pub fn Audit() -> impl IntoView {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        let get = |k: &str| q.get(k).unwrap_or_default();
        AuditFilter {
            tenant: get("tenant"),
            actor: get("actor"),
            action: get("action"),
            since: get("since"),
            until: get("until"),
        }
    };
    let offset = move || {
        query
            .read()
            .get("offset")
            .and_then(|o| o.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let page = crate::hydrated::resource(
        move || (filter(), offset()),
        |(f, o)| crate::audit::sfn::list_audit(f, Some(o)),
    );
    let csv = move || {
        let q = filter_query(&filter());
        if q.is_empty() {
            "/api/v1/audit?format=csv".to_owned()
        } else {
            format!("/api/v1/audit?format=csv&{q}")
        }
    };

    // The filters and the export only for those who may read the trail: a refusal is all a
    // member sees.
    view! {
        <Title text="Audit" />
        <h1>"Audit log"</h1>
        <Transition fallback=|| view! { <p class="muted">"Loading events…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! {
                        <section class="card" aria-labelledby="audit-heading">
                            <div class="card-head">
                                <h2 id="audit-heading">"Events"</h2>
                                <a href=csv id="audit-csv" rel="external" download="kqueen-audit.csv">"Export CSV"</a>
                            </div>
                            <AuditFilterForm filter=filter() />
                            <AuditTable page=p filter=filter() />
                        </section>
                    }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn AuditFilterForm(filter: AuditFilter) -> impl IntoView {
    view! {
        <form method="get" action="/audit" class="filter wrap" id="audit-filter">
            <label for="audit-tenant">"Tenant"</label>
            <input id="audit-tenant" name="tenant" maxlength="63" value=filter.tenant />
            <label for="audit-actor">"Actor"</label>
            <input id="audit-actor" name="actor" maxlength="100" value=filter.actor />
            <label for="audit-action">"Action"</label>
            <input id="audit-action" name="action" placeholder="e.g. auth.login or member." maxlength="64"
                value=filter.action />
            <label for="audit-since">"From"</label>
            <input id="audit-since" name="since" type="date" value=filter.since />
            <label for="audit-until">"To"</label>
            <input id="audit-until" name="until" type="date" value=filter.until />
            <button type="submit">"Filter"</button>
        </form>
    }
}

#[component]
fn AuditTable(page: AuditPageDto, filter: AuditFilter) -> impl IntoView {
    if page.events.is_empty() {
        return view! { <p class="empty">"No audit events."</p> }.into_any();
    }
    let base = filter_query(&filter);
    let link = move |offset: u32| {
        if base.is_empty() {
            format!("/audit?offset={offset}")
        } else {
            format!("/audit?{base}&offset={offset}")
        }
    };
    let newer = (page.offset > 0).then(|| link(page.offset.saturating_sub(page.limit)));
    let older = page.has_more.then(|| link(page.offset + page.limit));
    view! {
        <table class="table" id="audit-table">
            <caption class="visually-hidden">"Audit events"</caption>
            <TableHead cols=vec!["Time (UTC)", "Actor", "Tenant", "Action", "Target", "Result", "Source", "Detail"] />
            <tbody>
                {page.events.into_iter().map(|e| {
                    let outcome_class = format!("badge badge-{}", e.result);
                    view! {
                        <tr data-event=e.id>
                            <td>{crate::time::to_second(&e.time)}</td>
                            <td>{e.actor}</td>
                            <td>{e.tenant.unwrap_or_default()}</td>
                            <td><code>{e.action}</code></td>
                            <td>{e.target}</td>
                            <td><span class=outcome_class>{e.result}</span></td>
                            <td>{e.source_ip.unwrap_or_default()}</td>
                            <td>{e.detail.unwrap_or_default()}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <nav class="pager" aria-label="Pages">
            {newer.map(|href| view! { <A href=href>"← Newer"</A> })}
            {older.map(|href| view! { <A href=href>"Older →"</A> })}
        </nav>
    }
    .into_any()
}
