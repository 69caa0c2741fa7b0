//! `/fleet/versions`: the Kubernetes versions of all clusters.

#[allow(clippy::wildcard_imports)]
use super::*;

#[component]
pub fn FleetVersions() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
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
