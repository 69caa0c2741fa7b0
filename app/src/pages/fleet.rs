//! `/fleet` (dashboard: clusters by state, provider and version, capacity, clusters needing
//! attention) and the fleet audit queries `/fleet/images`, `/fleet/images/history`,
//! `/fleet/versions` and `/fleet/findings`: filtered by GET forms, paged, exportable as CSV and JSON through the
//! same query on /api/v1.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

use crate::api_fleet as api;
use crate::components::{ErrorNote, Me, Stat};
use crate::dto_fleet::{
    FindingsPageDto, FleetClusterDto, FleetListDto, FleetPageDto, FleetQuery, ImageDto,
    ImageHistoryDto, VersionDto,
};
use crate::pages::inventory::Chart;

fn use_fleet_query() -> (
    impl Fn() -> FleetQuery + Copy + Send + Sync + 'static,
    impl Fn() -> u32 + Copy + Send + Sync + 'static,
) {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        let get = |k: &str| q.get(k).unwrap_or_default();
        FleetQuery {
            tenant: get("tenant"),
            cluster: get("cluster"),
            q: get("q"),
            severity: get("severity"),
            check: get("check"),
        }
    };
    let offset = move || {
        query
            .read()
            .get("offset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(0)
    };
    (filter, offset)
}

/// Links between the fleet pages; the dashboard's only for those who may see it (operators
/// and tenant admins).
#[component]
fn FleetTabs() -> impl IntoView {
    let location = use_location();
    let me = use_context::<Me>();
    let here = location.clone();
    let dashboard = move || {
        let location = here.clone();
        Suspend::new(async move {
            let may = match me {
                Some(Me(me)) => matches!(me.await, Ok(Some(u)) if u.can_audit),
                None => false,
            };
            may.then(|| {
                let current = move || (location.pathname.get() == "/fleet").then_some("page");
                view! { <li><a href="/fleet" aria-current=current>"Dashboard"</a></li> }
            })
        })
    };
    let tab = move |href: &'static str, label: &'static str| {
        let current = move || (location.pathname.get() == href).then_some("page");
        view! { <li><a href=href aria-current=current>{label}</a></li> }
    };
    view! {
        <nav class="tabs" aria-label="Fleet">
            <ul>
                <Suspense fallback=|| ()>{dashboard}</Suspense>
                {tab("/fleet/images", "Images")}
                {tab("/fleet/images/history", "Image history")}
                {tab("/fleet/versions", "Versions")}
                {tab("/fleet/findings", "Findings")}
            </ul>
        </nav>
    }
}

/// Newer/older links of a paged list at `path` with `filter`.
#[component]
fn Pager(
    path: &'static str,
    filter: FleetQuery,
    offset: u32,
    limit: u32,
    total: u64,
) -> impl IntoView {
    let base = filter.to_query();
    let link = move |o: u32| {
        if base.is_empty() {
            format!("{path}?offset={o}")
        } else {
            format!("{path}?{base}&offset={o}")
        }
    };
    let previous = (offset > 0).then(|| link(offset.saturating_sub(limit)));
    let next =
        (u64::from(offset) + u64::from(limit) < total).then(|| link(offset.saturating_add(limit)));
    let last = (u64::from(offset) + u64::from(limit)).min(total);
    view! {
        <nav class="pager" aria-label="Pages">
            <span class="muted">{if total == 0 { "none".to_owned() } else { format!("{}–{} of {total}", u64::from(offset) + 1, last) }}</span>
            {previous.map(|href| view! { <a href=href rel="prev">"← Previous"</a> })}
            {next.map(|href| view! { <a href=href rel="next" id="next-page">"Next →"</a> })}
        </nav>
    }
}

/// CSV and JSON downloads of the whole result of a fleet query.
#[component]
fn Exports(what: &'static str, filter: FleetQuery) -> impl IntoView {
    let q = filter.to_query();
    let sep = if q.is_empty() { "" } else { "&" };
    let file = what.replace('/', "-");
    view! {
        <span class="exports">
            <a href=format!("/api/v1/fleet/{what}?format=csv{sep}{q}") rel="external" id="export-csv"
                download=format!("kqueen-{file}.csv")>"Export CSV"</a>
            " · "
            <a href=format!("/api/v1/fleet/{what}?download=true{sep}{q}") rel="external" id="export-json"
                download=format!("kqueen-{file}.json")>"Export JSON"</a>
        </span>
    }
}

/// The tenant, cluster and text filters shared by the fleet query pages.
#[component]
fn FilterFields(filter: FleetQuery, tenants: Vec<String>, q_label: &'static str) -> impl IntoView {
    view! {
        <label for="f-q">{q_label}</label>
        <input id="f-q" name="q" type="search" maxlength="200" value=filter.q.clone() />
        <label for="f-tenant">"Tenant"</label>
        <select id="f-tenant" name="tenant">
            <option value="">"All"</option>
            {tenants.into_iter().map(|t| {
                let selected = t == filter.tenant;
                view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
            }).collect_view()}
        </select>
        <label for="f-cluster">"Cluster"</label>
        <input id="f-cluster" name="cluster" maxlength="63" value=filter.cluster.clone() />
    }
}

/// A page body that waits for `resource` and renders it, or the error.
macro_rules! loaded {
    ($resource:expr, $loading:literal, |$v:ident| $body:expr) => {
        view! {
            <Transition fallback=|| view! { <p class="muted">$loading</p> }>
                {move || Suspend::new(async move {
                    match $resource.await {
                        Ok($v) => $body.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Transition>
        }
    };
}

#[component]
pub fn Fleet() -> impl IntoView {
    let (filter, _) = use_fleet_query();
    let tenant = move || Some(filter().tenant).filter(|t| !t.is_empty());
    let page = Resource::new(tenant, api::fleet_page);
    view! {
        <Title text="Fleet" />
        <h1>"Fleet"</h1>
        <FleetTabs />
        {loaded!(page, "Loading the fleet…", |p| view! { <Dashboard page=p tenant=filter().tenant /> })}
    }
}

#[component]
fn Dashboard(page: FleetPageDto, tenant: String) -> impl IntoView {
    let p = page;
    view! {
        <form method="get" action="/fleet" class="filter" id="fleet-filter">
            <label for="f-tenant">"Tenant"</label>
            <select id="f-tenant" name="tenant">
                <option value="">"All"</option>
                {p.tenants.iter().map(|t| {
                    let selected = *t == tenant;
                    view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
                }).collect_view()}
            </select>
            <button type="submit">"Show"</button>
        </form>
        <section class="stats" aria-label="Fleet figures" id="fleet-stats">
            <Stat label="Clusters" value=p.clusters.to_string() />
            <Stat label="Nodes Ready" value=format!("{} / {}", p.nodes_ready, p.nodes) />
            <Stat label="CPU requested / allocatable" value=format!("{} / {}", p.requested.cpu, p.allocatable.cpu) />
            <Stat label="Memory requested / allocatable" value=format!("{} / {}", p.requested.memory, p.allocatable.memory) />
            <Stat label="Newest Kubernetes" value=p.newest_version.clone().unwrap_or_else(|| "unknown".into()) />
        </section>
        <div class="grid-2">
            <Chart svg=p.state_chart.clone() id="chart-state" />
            <Chart svg=p.provider_chart.clone() id="chart-provider" />
            <Chart svg=p.version_chart.clone() id="chart-version" />
            <Chart svg=p.cpu_chart.clone() id="chart-fleet-cpu" />
            <Chart svg=p.memory_chart.clone() id="chart-fleet-memory" />
        </div>
        <section class="card" aria-labelledby="attention-heading">
            <div class="card-head"><h2 id="attention-heading">{format!("Needs attention ({})", p.attention.len())}</h2></div>
            {if p.attention.is_empty() {
                view! { <p class="empty">"Every cluster is well."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="attention">
                        <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Tenant"</th><th scope="col">"State"</th><th scope="col">"Why"</th></tr></thead>
                        <tbody>
                            {p.attention.into_iter().map(|a| view! {
                                <tr data-cluster=a.cluster.name.clone()>
                                    <th scope="row"><a href=format!("/clusters/{}", a.cluster.id)>{a.cluster.name.clone()}</a></th>
                                    <td>{a.cluster.tenant.clone()}</td>
                                    <td><span class=format!("badge state-{}", a.cluster.state)>{a.cluster.state_label.clone()}</span></td>
                                    <td><ul class="plain">{a.reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul></td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
        <section class="card" aria-labelledby="fleet-clusters-heading">
            <div class="card-head"><h2 id="fleet-clusters-heading">{format!("Clusters ({})", p.rows.len())}</h2></div>
            <ClusterTable rows=p.rows />
        </section>
    }
}

#[component]
fn ClusterTable(rows: Vec<FleetClusterDto>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="empty">"No clusters."</p> }.into_any();
    }
    view! {
        <div class="table-scroll">
            <table class="table" id="fleet-clusters">
                <thead><tr>
                    <th scope="col">"Cluster"</th><th scope="col">"Tenant"</th><th scope="col">"State"</th>
                    <th scope="col">"Provider"</th><th scope="col">"Kubernetes"</th><th scope="col">"Nodes Ready"</th>
                    <th scope="col">"CPU req. / alloc."</th><th scope="col">"Memory req. / alloc."</th><th scope="col">"Last sync"</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|c| view! {
                        <tr data-cluster=c.name.clone()>
                            <th scope="row"><a href=format!("/clusters/{}", c.id)>{c.name.clone()}</a></th>
                            <td>{c.tenant}</td>
                            <td><span class=format!("badge state-{}", c.state)>{c.state_label}</span></td>
                            <td>{c.provider}</td>
                            <td>{c.api_version.unwrap_or_else(|| "unknown".into())}</td>
                            <td>{format!("{} / {}", c.nodes_ready, c.nodes)}</td>
                            <td>{format!("{} / {}", c.requested.cpu, c.allocatable.cpu)}</td>
                            <td>{format!("{} / {}", c.requested.memory, c.allocatable.memory)}</td>
                            <td>{c.synced.unwrap_or_else(|| "never".into())}
                                {c.sync_error.map(|e| view! { <br /><small class="error-text">{e}</small> })}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
pub fn FleetImages() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
        move || (filter(), offset()),
        |(f, o)| api::fleet_images_page(f, Some(o)),
    );
    view! {
        <Title text="Images · Fleet" />
        <h1>"Fleet: images"</h1>
        <FleetTabs />
        {loaded!(page, "Loading images…", |p| view! { <ImageList page=p filter=filter() /> })}
    }
}

#[component]
fn ImageList(page: FleetListDto<ImageDto>, filter: FleetQuery) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="images-heading">
            <div class="card-head">
                <h2 id="images-heading">{format!("{} image(s)", page.total)}</h2>
                <Exports what="images" filter=filter.clone() />
            </div>
            <form method="get" action="/fleet/images" class="filter wrap" id="images-filter">
                <FilterFields filter=filter.clone() tenants=page.tenants.clone() q_label="Image contains" />
                <button type="submit">"Search"</button>
            </form>
            {if page.rows.is_empty() {
                view! { <p class="empty">"No image matches."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="images">
                        <thead><tr><th scope="col">"Image"</th><th scope="col">"Clusters"</th><th scope="col">"First seen"</th><th scope="col">"Where it runs"</th></tr></thead>
                        <tbody>
                            {page.rows.into_iter().map(|i| view! {
                                <tr data-image=i.image.clone()>
                                    <th scope="row"><code>{image_name(&i)}</code>
                                        {i.digest.clone().map(|d| { let short = short_digest(&d); view! { <br /><small class="muted digest" title=d>{short}</small> }})}
                                    </th>
                                    <td>{i.clusters}</td>
                                    <td>{i.first_seen}</td>
                                    <td class="usages-cell">
                                        <ul class="plain usages">
                                            {i.usages.into_iter().map(|u| view! {
                                                <li>
                                                    <a href=format!("/clusters/{}", u.cluster_id)>{u.cluster}</a>
                                                    {format!(" ({}) · {} · {} · container {} · {} pod(s)", u.tenant, u.namespace, u.workload, u.container, u.pods)}
                                                    {u.first_seen.map(|f| view! { <small class="muted">{format!(" · since {f}")}</small> })}
                                                </li>
                                            }).collect_view()}
                                        </ul>
                                    </td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <Pager path="/fleet/images" filter offset=page.offset limit=page.limit total=page.total />
        </section>
    }
}

#[component]
pub fn FleetImageHistory() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
        move || (filter(), offset()),
        |(f, o)| api::fleet_image_history_page(f, Some(o)),
    );
    view! {
        <Title text="Image history · Fleet" />
        <h1>"Fleet: image history"</h1>
        <FleetTabs />
        {loaded!(page, "Loading the image history…", |p| view! { <HistoryList page=p filter=filter() /> })}
    }
}

#[component]
fn HistoryList(page: FleetListDto<ImageHistoryDto>, filter: FleetQuery) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="history-heading">
            <div class="card-head">
                <h2 id="history-heading">{format!("{} image(s) per cluster, gone ones included", page.total)}</h2>
                <Exports what="images/history" filter=filter.clone() />
            </div>
            <form method="get" action="/fleet/images/history" class="filter wrap" id="history-filter">
                <FilterFields filter=filter.clone() tenants=page.tenants.clone() q_label="Image contains" />
                <button type="submit">"Search"</button>
            </form>
            {if page.rows.is_empty() {
                view! { <p class="empty">"No image matches."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="image-history">
                        <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Tenant"</th><th scope="col">"Image"</th>
                            <th scope="col">"First seen"</th><th scope="col">"Last seen"</th><th scope="col">"Now"</th></tr></thead>
                        <tbody>
                            {page.rows.into_iter().map(|h| view! {
                                <tr data-cluster=h.cluster.clone() data-image=h.image.clone()>
                                    <th scope="row"><a href=format!("/clusters/{}", h.cluster_id)>{h.cluster.clone()}</a></th>
                                    <td>{h.tenant}</td>
                                    <td><code>{h.image.split('@').next().unwrap_or_default().to_owned()}</code>
                                        {h.digest.clone().map(|d| { let short = short_digest(&d); view! { <br /><small class="muted digest" title=d>{short}</small> }})}
                                    </td>
                                    <td>{h.first_seen}</td>
                                    <td>{h.last_seen}</td>
                                    <td>{if h.present { "running" } else { "gone" }}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <Pager path="/fleet/images/history" filter offset=page.offset limit=page.limit total=page.total />
        </section>
    }
}

/// `registry/repository:tag` without the digest (shown apart, shortened).
fn image_name(i: &ImageDto) -> String {
    match (&i.registry, &i.repository) {
        (Some(registry), Some(repository)) => match &i.tag {
            Some(tag) => format!("{registry}/{repository}:{tag}"),
            None => format!("{registry}/{repository}"),
        },
        _ => i.image.clone(),
    }
}

/// `sha256:4c0fdaa8b634…`: enough to tell digests apart at a glance (the title has it all).
fn short_digest(d: &str) -> String {
    match d.char_indices().nth(19) {
        Some((cut, _)) => format!("{}…", &d[..cut]),
        None => d.to_owned(),
    }
}

#[component]
pub fn FleetVersions() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
        move || (filter(), offset()),
        |(f, o)| api::fleet_versions_page(f, Some(o)),
    );
    view! {
        <Title text="Versions · Fleet" />
        <h1>"Fleet: versions"</h1>
        <FleetTabs />
        {loaded!(page, "Loading versions…", |p| view! { <VersionList page=p filter=filter() /> })}
    }
}

#[component]
fn VersionList(page: FleetListDto<VersionDto>, filter: FleetQuery) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="versions-heading">
            <div class="card-head">
                <h2 id="versions-heading">{format!("{} row(s): API servers and nodes", page.total)}</h2>
                <Exports what="versions" filter=filter.clone() />
            </div>
            <form method="get" action="/fleet/versions" class="filter wrap" id="versions-filter">
                <FilterFields filter=filter.clone() tenants=page.tenants.clone() q_label="Version contains" />
                <button type="submit">"Filter"</button>
            </form>
            {if page.rows.is_empty() {
                view! { <p class="empty">"No cluster matches."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="versions">
                        <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Tenant"</th><th scope="col">"API server"</th>
                            <th scope="col">"Node"</th><th scope="col">"Kubelet"</th><th scope="col">"Runtime"</th><th scope="col">"OS"</th><th scope="col">"Synced"</th></tr></thead>
                        <tbody>
                            {page.rows.into_iter().map(|v| view! {
                                <tr data-cluster=v.cluster.clone()>
                                    <th scope="row"><a href=format!("/clusters/{}", v.cluster_id)>{v.cluster.clone()}</a></th>
                                    <td>{v.tenant}</td>
                                    <td>{v.api_version.unwrap_or_else(|| "unknown".into())}</td>
                                    <td>{v.node.unwrap_or_default()}
                                        {(v.ready == Some(false)).then(|| view! { " " <span class="badge badge-failed">"NotReady"</span> })}</td>
                                    <td>{v.kubelet.unwrap_or_default()}</td>
                                    <td>{v.runtime.unwrap_or_default()}</td>
                                    <td>{v.os.unwrap_or_default()}</td>
                                    <td>{v.synced.unwrap_or_else(|| "never".into())}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <Pager path="/fleet/versions" filter offset=page.offset limit=page.limit total=page.total />
        </section>
    }
}

#[component]
pub fn FleetFindings() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
        move || (filter(), offset()),
        |(f, o)| api::fleet_findings_page(f, Some(o)),
    );
    view! {
        <Title text="Findings · Fleet" />
        <h1>"Fleet: audit findings"</h1>
        <FleetTabs />
        {loaded!(page, "Loading findings…", |p| view! { <FindingList page=p filter=filter() /> })}
    }
}

#[component]
fn FindingList(page: FindingsPageDto, filter: FleetQuery) -> impl IntoView {
    let FindingsPageDto {
        list,
        counts,
        chart,
    } = page;
    let per_severity =
        |sev: &str| -> u64 { counts.iter().filter(|c| c.0 == sev).map(|c| c.2).sum() };
    let mut checks: Vec<String> = counts.iter().map(|c| c.1.clone()).collect();
    checks.sort();
    checks.dedup();
    // Rows arrive most severe first: a heading row starts each severity's group.
    let mut groups: Vec<(String, Vec<_>)> = Vec::new();
    for row in list.rows {
        if groups.last().map(|g| g.0.as_str()) != Some(row.finding.severity.as_str()) {
            groups.push((row.finding.severity.clone(), Vec::new()));
        }
        if let Some(g) = groups.last_mut() {
            g.1.push(row);
        }
    }
    view! {
        <section class="stats" aria-label="Findings per severity" id="severity-counts">
            <Stat label="High" value=per_severity("high").to_string() />
            <Stat label="Medium" value=per_severity("medium").to_string() />
            <Stat label="Low" value=per_severity("low").to_string() />
        </section>
        <Chart svg=chart id="chart-findings" />
        <section class="card" aria-labelledby="findings-heading">
            <div class="card-head">
                <h2 id="findings-heading">{format!("{} finding(s)", list.total)}</h2>
                <Exports what="findings" filter=filter.clone() />
            </div>
            <form method="get" action="/fleet/findings" class="filter wrap" id="findings-filter">
                <FilterFields filter=filter.clone() tenants=list.tenants.clone() q_label="Text contains" />
                <label for="f-severity">"Severity"</label>
                <select id="f-severity" name="severity">
                    <option value="">"All"</option>
                    {["high", "medium", "low"].into_iter().map(|s| {
                        let selected = filter.severity == s;
                        view! { <option value=s selected=selected>{s}</option> }
                    }).collect_view()}
                </select>
                <label for="f-check">"Check"</label>
                <select id="f-check" name="check">
                    <option value="">"All"</option>
                    {checks.into_iter().map(|c| {
                        let selected = filter.check == c;
                        view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                    }).collect_view()}
                </select>
                <button type="submit">"Filter"</button>
            </form>
            {if groups.is_empty() {
                view! { <p class="empty">"No findings."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="findings">
                        <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Tenant"</th><th scope="col">"Check"</th>
                            <th scope="col">"Subject"</th><th scope="col">"Finding"</th></tr></thead>
                        {groups.into_iter().map(|(severity, rows)| view! {
                            <tbody data-severity=severity.clone()>
                                <tr class="group"><th scope="colgroup" colspan="5">
                                    <span class=format!("badge badge-sev-{severity}")>{severity.clone()}</span>
                                </th></tr>
                                {rows.into_iter().map(|r| view! {
                                    <tr>
                                        <td><a href=format!("/clusters/{}", r.cluster_id)>{r.cluster}</a></td>
                                        <td>{r.tenant}</td>
                                        <td><code>{r.finding.check}</code></td>
                                        <td>{r.finding.subject}</td>
                                        <td>{r.finding.message}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        }).collect_view()}
                    </table>
                }.into_any()
            }}
            <Pager path="/fleet/findings" filter offset=list.offset limit=list.limit total=list.total />
        </section>
    }
}
