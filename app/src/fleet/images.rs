//! `/fleet/images` and `/fleet/images/history`: every image with where it runs, and since when.

#[allow(clippy::wildcard_imports)]
use super::*;

#[component]
pub fn FleetImages() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = Resource::new(
        move || (filter(), offset()),
        |(f, o)| sfn::fleet_images_page(f, Some(o)),
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
        |(f, o)| sfn::fleet_image_history_page(f, Some(o)),
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
