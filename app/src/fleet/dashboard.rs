//! `/fleet`: clusters by state, provider and version, capacity, clusters needing attention.

use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

use leptos_router::hooks::use_query_map;

use super::{use_fleet_query, FleetTabs, Pager};
use crate::components::{ErrorNote, ListCard, Stat, TableHead, TenantFilter};
use crate::fleet::dto::{AttentionDto, FleetPageDto, TenantStorageDto};
use crate::fleet::inventory::Chart;
use crate::fleet::sfn;
use crate::hydrated::{self, Hydrated};

#[component]
pub fn Fleet() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let query = use_query_map();
    let attention = move || query.read().get("attention").is_some_and(|a| a == "true");
    let tenant = move || Some(filter().tenant).filter(|t| !t.is_empty());
    let page = crate::hydrated::resource(
        move || (tenant(), attention(), offset()),
        |(t, a, o)| hydrated::fetch(sfn::fleet_page(t, Some(a), Some(o))),
    );
    view! {
        <Title text="Fleet" />
        <h1>"Fleet"</h1>
        <FleetTabs />
        {loaded!(page, "Loading the fleet…", |Hydrated(p)| view! { <Dashboard page=p tenant=filter().tenant /> })}
    }
}

#[component]
fn Dashboard(page: FleetPageDto, tenant: String) -> impl IntoView {
    let p = page;
    let more_attention =
        (p.attention_total > p.attention.len() as u64).then(|| dashboard_href(&tenant, true));
    let all_clusters = p.attention_only.then(|| dashboard_href(&tenant, false));
    let pager_query = dashboard_query(&tenant, p.attention_only);
    view! {
        <form method="get" action="/fleet" class="filter" id="fleet-filter">
            <TenantFilter tenants=p.tenants.clone() selected=tenant.clone() />
            {p.attention_only.then(|| view! { <input type="hidden" name="attention" value="true" /> })}
            <button type="submit">"Show"</button>
        </form>
        <section class="stats" aria-label="Fleet figures" id="fleet-stats">
            <Stat label="Clusters" value=p.clusters.to_string() />
            <Stat label="Nodes Ready" value=format!("{} / {}", p.nodes_ready, p.nodes) />
            <Stat label="CPU requested / allocatable" value=format!("{} / {}", p.requested.cpu, p.allocatable.cpu) />
            <Stat label="Memory requested / allocatable" value=format!("{} / {}", p.requested.memory, p.allocatable.memory) />
            <VersionStat id="newest-running" label="Newest Kubernetes running" value=p.newest_running.clone()
                note=if p.newest_running.is_some() { "reported by a synced cluster's API server" } else { "no cluster synced yet" } />
            <VersionStat id="newest-offered" label="Newest Kubernetes offered" value=p.newest_offered.clone()
                note=if p.newest_offered.is_some() {
                    "by a template or the configured minimum; clusters behind it need attention"
                } else {
                    "no template offers a version: no cluster counts as behind"
                } />
        </section>
        <div class="grid-2">
            <Chart svg=p.state_chart.clone() id="chart-state" />
            <Chart svg=p.provider_chart.clone() id="chart-provider" />
            <Chart svg=p.version_chart.clone() id="chart-version" />
            <Chart svg=p.cpu_chart.clone() id="chart-fleet-cpu" />
            <Chart svg=p.memory_chart.clone() id="chart-fleet-memory" />
        </div>
        // Under "only those needing attention", the list below is that list.
        {(!p.attention_only).then(|| view! { <AttentionCard rows=p.attention total=p.attention_total more=more_attention /> }.into_any())}
        // Type-erased: the dashboard's view type is deep enough for the release wasm build.
        {(!p.storage.is_empty()).then(|| view! { <StorageCard tenants=p.storage.clone() chart=p.storage_chart.clone().unwrap_or_default() /> }.into_any())}
        <section class="card" aria-labelledby="fleet-clusters-heading">
            <div class="card-head">
                <h2 id="fleet-clusters-heading">{if p.attention_only {
                    format!("Clusters needing attention ({})", p.total)
                } else {
                    format!("Clusters ({})", p.total)
                }}</h2>
                {all_clusters.map(|href| view! { <a id="all-clusters" href=href>"All clusters"</a> })}
            </div>
            <ClusterTable rows=p.rows why=p.attention_only />
            <Pager path="/fleet" query=pager_query offset=p.offset limit=p.limit total=p.total />
        </section>
    }
}

/// The dashboard for the tenant picked in the filter (none: every tenant), listing only the
/// clusters needing attention or all of them.
fn dashboard_href(tenant: &str, attention: bool) -> String {
    let query = dashboard_query(tenant, attention);
    if query.is_empty() {
        "/fleet".to_owned()
    } else {
        format!("/fleet?{query}")
    }
}

/// The dashboard's filters as a query string (the pager's, the links').
fn dashboard_query(tenant: &str, attention: bool) -> String {
    let mut q = Vec::new();
    if !tenant.is_empty() {
        q.push(format!(
            "tenant={}",
            crate::query::encode_query_value(tenant)
        ));
    }
    if attention {
        q.push("attention=true".to_owned());
    }
    q.join("&")
}

/// The first clusters needing attention, with why, and a link to all of them (`more`).
#[component]
fn AttentionCard(rows: Vec<AttentionDto>, total: u64, more: Option<String>) -> impl IntoView {
    view! {
        <ListCard name="attention" heading=format!("Needs attention ({})", total) empty="Every cluster is well." is_empty=rows.is_empty()>
            <table class="table" id="attention">
                <TableHead cols=vec!["Cluster", "Tenant", "State", "Why"] />
                <tbody>
                    {rows.into_iter().map(|a| view! {
                        <tr data-cluster=a.cluster.name.clone()>
                            <th scope="row"><a href=format!("/clusters/{}", a.cluster.id)>{a.cluster.name.clone()}</a></th>
                            <td>{a.cluster.tenant.clone()}</td>
                            <td><span class=format!("badge state-{}", a.cluster.state)>{a.cluster.state_label.clone()}</span></td>
                            <td><ul class="plain">{a.reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            {more.map(|href| view! {
                <p><a id="attention-all" href=href>
                    {format!("All {} clusters needing attention →", total)}</a></p>
            })}
        </ListCard>
    }
}

/// A Kubernetes version figure: the version, or "none yet", and what it is measured from.
#[component]
fn VersionStat(
    id: &'static str,
    label: &'static str,
    value: Option<String>,
    note: &'static str,
) -> impl IntoView {
    view! {
        <div class="stat" id=id>
            <div class="stat-value">{value.unwrap_or_else(|| "none yet".into())}</div>
            <div class="stat-label">{label}</div>
            <div class="stat-note">{note}</div>
        </div>
    }
}

/// Operators: each tenant's hosted clusters' shared etcd usage against its quota (over it,
/// they are read-only there).
#[component]
fn StorageCard(tenants: Vec<TenantStorageDto>, chart: String) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="fleet-storage-heading">
            <div class="card-head"><h2 id="fleet-storage-heading">"Shared etcd per tenant"</h2></div>
            <div class="grid-2">
                <Chart svg=chart id="chart-storage" />
                <div class="table-scroll">
                    <table class="table" id="fleet-storage">
                        <TableHead cols=vec!["Tenant", "Clusters", "Used", "Quota", "Of quota", "Writes"] />
                        <tbody>
                            {tenants.into_iter().map(|t| view! {
                                <tr data-tenant=t.tenant.clone()>
                                    <th scope="row"><a href=format!("/tenants/{}", t.tenant)>{t.tenant.clone()}</a></th>
                                    <td>{t.clusters}</td>
                                    <td>{t.used}</td>
                                    <td>{t.quota}</td>
                                    <td>{t.share.unwrap_or_else(|| "–".into())}</td>
                                    <td>{if t.writable {
                                        view! { "allowed" }.into_any()
                                    } else {
                                        view! { <span class="badge state-error">"refused: over quota"</span> }.into_any()
                                    }}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </div>
        </section>
    }
    .into_any()
}

/// One page of the clusters; with `why`, the reasons each needs attention. Not type-erased
/// (`into_any` would first copy the whole table into owned form).
#[component]
fn ClusterTable(rows: Vec<AttentionDto>, why: bool) -> impl IntoView {
    if rows.is_empty() {
        return Either::Left(view! { <p class="empty">"No clusters."</p> });
    }
    // The etcd column only where someone sees it (operators) and a cluster has a key space.
    let etcd = rows.iter().any(|a| a.cluster.etcd.is_some());
    let mut cols = vec![
        "Cluster",
        "Tenant",
        "State",
        "Provider",
        "Kubernetes",
        "Nodes Ready",
        "CPU req. / alloc.",
        "Memory req. / alloc.",
        "Last sync",
    ];
    if etcd {
        cols.push("Shared etcd");
    }
    if why {
        cols.push("Why");
    }
    Either::Right(view! {
        <div class="table-scroll">
            <table class="table" id="fleet-clusters">
                <TableHead cols=cols />
                <tbody>
                    // Text cells joined with `concat` rather than `format!`: a fleet page writes
                    // 250 of them, and the formatter cost ten times the copying (callgrind).
                    {rows.into_iter().map(|AttentionDto { cluster: c, reasons }| view! {
                        <tr data-cluster=c.name.clone()>
                            <th scope="row"><a href=["/clusters/", &c.id].concat()>{c.name.clone()}</a></th>
                            <td>{c.tenant}</td>
                            <td><span class=["badge state-", &c.state].concat()>{c.state_label}</span></td>
                            <td>{c.provider}</td>
                            <td>{c.api_version.unwrap_or_else(|| "unknown".into())}</td>
                            <td>{format!("{} / {}", c.nodes_ready, c.nodes)}</td>
                            <td>{[&*c.requested.cpu, " / ", &c.allocatable.cpu].concat()}</td>
                            <td>{[&*c.requested.memory, " / ", &c.allocatable.memory].concat()}</td>
                            <td>{c.synced.unwrap_or_else(|| "never".into())}
                                {c.sync_error.map(|e| view! { <br /><small class="error-text">{e}</small> })}</td>
                            {etcd.then(|| view! {
                                <td class="etcd">{c.etcd.unwrap_or_else(|| "–".into())}
                                    {c.etcd_read_only.then(|| view! { " " <span class="badge state-error">"read-only"</span> })}</td>
                            })}
                            {why.then(|| view! {
                                <td><ul class="plain">{reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul></td>
                            })}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    })
}
