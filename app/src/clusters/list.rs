//! `/clusters`: the clusters the caller may see, filtered by tenant, state and name.

use kqueen_dto::clusters::ClusterState;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::clusters::dto::ClustersPageDto;
use crate::components::{encode_query_value, ErrorNote, TableHead, TenantFilter};
use crate::hydrated::{self, Hydrated};
use crate::time::to_minute_utc;

pub(super) fn query(key: &'static str) -> impl Fn() -> Option<String> + Copy + Send + Sync {
    let q = use_query_map();
    move || q.read().get(key).filter(|v| !v.is_empty())
}

#[component]
pub fn Clusters() -> impl IntoView {
    let (tenant, state, name, offset) = (
        query("tenant"),
        query("state"),
        query("name"),
        query("offset"),
    );
    let page = hydrated::resource(
        move || {
            (
                tenant(),
                state(),
                name(),
                offset().and_then(|o| o.parse().ok()),
            )
        },
        |(t, s, n, o)| hydrated::fetch(crate::clusters::sfn::clusters_page(t, s, n, o)),
    );
    view! {
        <Title text="Clusters" />
        <div class="page-head">
            <h1>"Clusters"</h1>
            <a class="button" href="/clusters/new" id="request-cluster">"Request a cluster"</a>
        </div>
        {loaded!(page, "Loading clusters…", |Hydrated(p)| view! {
            <ClusterList page=p tenant=tenant() state=state() name=name() />
        })}
    }
}

#[component]
fn ClusterList(
    page: ClustersPageDto,
    tenant: Option<String>,
    state: Option<String>,
    name: Option<String>,
) -> impl IntoView {
    let filter_query = format!(
        "tenant={}&state={}&name={}",
        encode_query_value(tenant.as_deref().unwrap_or("")),
        encode_query_value(state.as_deref().unwrap_or("")),
        encode_query_value(name.as_deref().unwrap_or(""))
    );
    let older = (u64::from(page.offset + page.limit) < page.total).then(|| {
        format!(
            "/clusters?{filter_query}&offset={}",
            page.offset + page.limit
        )
    });
    let newer = (page.offset > 0).then(|| {
        format!(
            "/clusters?{filter_query}&offset={}",
            page.offset.saturating_sub(page.limit)
        )
    });
    let shown = page.clusters.len();
    view! {
        <section class="card" aria-labelledby="clusters-heading">
            <div class="card-head"><h2 id="clusters-heading">{format!("{} cluster(s)", page.total)}</h2></div>
            <form method="get" action="/clusters" class="filter wrap" id="cluster-filter">
                <TenantFilter tenants=page.tenants selected=tenant.clone().unwrap_or_default() />
                <label for="f-state">"State"</label>
                <select id="f-state" name="state">
                    <option value="">"Any"</option>
                    {ClusterState::ALL.iter().map(|s| {
                        let selected = state.as_deref() == Some(s.as_str());
                        view! { <option value=s.as_str() selected=selected>{s.label()}</option> }
                    }).collect_view()}
                </select>
                <label for="f-name">"Name"</label>
                <input id="f-name" name="name" value=name.clone().unwrap_or_default() placeholder="contains…" />
                <button type="submit">"Filter"</button>
            </form>
            {if shown == 0 {
                Either::Left(view! { <p class="empty">"No clusters yet. Request one from a template."</p> })
            } else {
                Either::Right(view! {
                    <table class="table" id="cluster-table">
                        <caption class="visually-hidden">"Clusters"</caption>
                        <TableHead cols=vec!["Name", "Tenant", "State", "Template", "Nodes", "Created", "Expires"] />
                        <tbody>
                            {page.clusters.into_iter().map(|c| view! {
                                <tr data-cluster=c.name.clone()>
                                    <td><a href=["/clusters/", &c.id].concat()>{c.name.clone()}</a></td>
                                    <td>{c.tenant}</td>
                                    <td><StateBadge state=c.state /></td>
                                    <td>{c.template}" "<span class="muted">"("{c.kind.as_str()}")"</span></td>
                                    <td>{c.node_count}</td>
                                    <td>{to_minute_utc(&c.created_at)}</td>
                                    <td>{c.expires_at.as_deref().map_or_else(|| "never".into(), to_minute_utc)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                })
            }}
            <nav class="pager" aria-label="Pages">
                {newer.map(|h| view! { <a href=h>"← Previous"</a> })}
                {older.map(|h| view! { <a href=h>"Next →"</a> })}
            </nav>
        </section>
    }
}

#[component]
pub(super) fn StateBadge(state: ClusterState) -> impl IntoView {
    view! { <span class=["badge state-", state.as_str()].concat() data-state=state.as_str()>{state.label()}</span> }
}
