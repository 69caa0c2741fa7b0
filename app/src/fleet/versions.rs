//! `/fleet/versions`: the Kubernetes versions of all clusters.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{use_fleet_query, FleetTabs, QueryCard, QueryNames};
use crate::components::{ErrorNote, TableHead};
use crate::fleet::dto::{FleetListDto, FleetQuery, VersionDto};
use crate::fleet::sfn;

#[component]
pub fn FleetVersions() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = crate::hydrated::resource(
        move || (filter(), offset()),
        |(f, o)| sfn::fleet_versions_page(f, Some(o)),
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
    let (rows, page) = page.split();
    view! {
        <QueryCard names=QueryNames { name: "versions", path: "/fleet/versions", what: "versions", q_label: "Version contains", button: "Filter", empty: "No cluster matches." } heading=format!("{} row(s): API servers and nodes", page.total) page has_rows=!rows.is_empty() filter=filter.clone()>
            <table class="table" id="versions">
                <TableHead cols=vec!["Cluster", "Tenant", "API server", "Node", "Kubelet", "Runtime", "OS", "Synced"] />
                <tbody>
                    {rows.into_iter().map(|v| view! {
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
        </QueryCard>
    }
}
