//! The fleet: its server functions (`sfn`), DTOs, the cluster page's inventory section
//! (`inventory`), and the pages `/fleet` (dashboard: clusters by state, provider and version, capacity, clusters needing
//! attention) and the fleet audit queries `/fleet/images`, `/fleet/images/history`,
//! `/fleet/versions` and `/fleet/findings`: filtered by GET forms, paged, exportable as CSV and JSON through the
//! same query on /api/v1.

pub mod actions;
pub mod dto;
pub(crate) mod inventory;
pub mod sfn;

pub use dashboard::Fleet;
pub use findings::FleetFindings;
pub use images::{FleetImageHistory, FleetImages};
pub use versions::FleetVersions;

use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_query_map};

use crate::components::TenantFilter;
use crate::fleet::dto::{FleetListDto, FleetQuery};
use crate::shell::Me;

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
pub(crate) fn FleetTabs() -> impl IntoView {
    let location = use_location();
    let me = crate::context::get::<Me>();
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
                {tab("/fleet/addons", "Addons")}
            </ul>
        </nav>
    }
}

/// Where a fleet query's card takes its names: `name` prefixes the heading's and the filter
/// form's ids, `path` is the page, `what` the API query (`/api/v1/fleet/<what>`).
#[derive(Clone, Copy)]
struct QueryNames {
    name: &'static str,
    path: &'static str,
    what: &'static str,
    q_label: &'static str,
    button: &'static str,
    empty: &'static str,
}

/// The card around one page of a fleet query: the heading with the exports, the filter form,
/// the rows (`children`, or the `empty` note when there are none) and the pager.
#[component]
fn QueryCard(
    names: QueryNames,
    heading: String,
    /// The page without its rows (they are the children).
    page: FleetListDto<()>,
    has_rows: bool,
    filter: FleetQuery,
    children: Children,
) -> impl IntoView {
    let QueryNames {
        name,
        path,
        what,
        q_label,
        button,
        empty,
    } = names;
    view! {
        <section class="card" aria-labelledby=format!("{name}-heading")>
            <div class="card-head">
                <h2 id=format!("{name}-heading")>{heading}</h2>
                <Exports what filter=filter.clone() />
            </div>
            <form method="get" action=path class="filter wrap" id=format!("{name}-filter")>
                <FilterFields filter=filter.clone() tenants=page.tenants q_label />
                <button type="submit">{button}</button>
            </form>
            {if !has_rows {
                view! { <p class="empty">{empty}</p> }.into_any()
            } else {
                children().into_any()
            }}
            <Pager path query=filter.to_query() offset=page.offset limit=page.limit total=page.total />
        </section>
    }
}

/// Newer/older links of a paged list at `path` with its filters' `query` string.
#[component]
fn Pager(path: &'static str, query: String, offset: u32, limit: u32, total: u64) -> impl IntoView {
    let base = query;
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
fn FilterFields(
    filter: FleetQuery,
    tenants: Option<Vec<String>>,
    q_label: &'static str,
) -> impl IntoView {
    view! {
        <label for="f-q">{q_label}</label>
        <input id="f-q" name="q" type="search" maxlength="200" value=filter.q.clone() />
        <TenantFilter tenants=tenants selected=filter.tenant.clone() />
        <label for="f-cluster">"Cluster"</label>
        <input id="f-cluster" name="cluster" maxlength="63" value=filter.cluster.clone() />
    }
}

mod dashboard;
mod findings;
mod images;
mod versions;
