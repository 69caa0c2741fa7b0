//! `/fleet/images` and `/fleet/images/history`: every image with where it runs, and since when.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{use_fleet_query, FleetTabs, QueryCard, QueryNames};
use crate::components::{ErrorNote, TableHead};
use crate::fleet::dto::{FleetListDto, FleetQuery, ImageDto, ImageHistoryDto};
use crate::fleet::sfn;

#[component]
pub fn FleetImages() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = crate::hydrated::resource(
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
    let (rows, page) = page.split();
    view! {
        <QueryCard names=QueryNames { name: "images", path: "/fleet/images", what: "images", q_label: "Image contains", button: "Search", empty: "No image matches." } heading=format!("{} image(s)", page.total) page has_rows=!rows.is_empty() filter=filter.clone()>
            <table class="table" id="images">
                <TableHead cols=vec!["Image", "Clusters", "First seen", "Where it runs"] />
                <tbody>
                    {rows.into_iter().map(|i| view! {
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
        </QueryCard>
    }
}

#[component]
pub fn FleetImageHistory() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = crate::hydrated::resource(
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
    let (rows, page) = page.split();
    view! {
        <QueryCard names=QueryNames { name: "history", path: "/fleet/images/history", what: "images/history", q_label: "Image contains", button: "Search", empty: "No image matches." } heading=format!("{} image(s) per cluster, gone ones included", page.total) page has_rows=!rows.is_empty() filter=filter.clone()>
            <table class="table" id="image-history">
                <TableHead cols=vec!["Cluster", "Tenant", "Image", "First seen", "Last seen", "Now"] />
                <tbody>
                    {rows.into_iter().map(|h| view! {
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
        </QueryCard>
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
