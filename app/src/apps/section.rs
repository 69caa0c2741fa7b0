//! The cluster page's "Applications" section: every version deployed there, each leading to
//! its page, and the way to deploy one.

use leptos::prelude::*;

use crate::apps::dto::ClusterAppsDto;
use crate::components::{ErrorNote, TableHead};
use crate::time::to_minute;

/// The section, read on its own (the cluster page's read stays as it is).
#[component]
pub fn ClusterApps(
    cluster_id: String,
    /// The caller may deploy here and the cluster is Ready.
    can_deploy: bool,
) -> impl IntoView {
    let id = cluster_id.clone();
    let apps = crate::hydrated::resource(move || id.clone(), crate::apps::sfn::cluster_apps);
    let link = format!("/clusters/{cluster_id}/apps/new");
    view! {
        <section class="card" aria-labelledby="apps-heading" id="apps">
            <div class="card-head">
                <h2 id="apps-heading">"Applications"</h2>
                {can_deploy.then(|| view! {
                    <a class="button" href=link.clone() id="deploy-app">"Deploy an application"</a>
                })}
            </div>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let cluster_id = cluster_id.clone();
                    Suspend::new(async move {
                    match apps.await {
                        Ok(a) => view! { <Versions apps=a cluster_id=cluster_id.clone() /> }.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}}
            </Suspense>
        </section>
    }
}

#[component]
fn Versions(apps: ClusterAppsDto, cluster_id: String) -> impl IntoView {
    if apps.versions.is_empty() {
        return view! { <p class="empty" id="apps-empty">"No application is deployed here."</p> }
            .into_any();
    }
    view! {
        <div class="table-scroll">
            <table class="table" id="app-table">
                <TableHead cols=vec!["Application", "Version", "Namespace", "State", "Deployed"] />
                <tbody>
                    {apps.versions.into_iter().map(|a| {
                        let href = crate::apps::version_path(&cluster_id, &a.id);
                        view! {
                            <tr data-app=a.name.clone() data-version=a.version.clone()>
                                <td><a href=href>{a.name.clone()}</a></td>
                                <td>{a.version.clone()}</td>
                                <td><code>{a.namespace.clone()}</code></td>
                                <td><AppStateBadge state=a.state.clone() /></td>
                                <td>{a.deployed_at.as_deref().map(|t| format!("{} UTC", to_minute(t))).unwrap_or_else(|| "not yet".into())}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A version's state as a badge (`data-app-state`).
#[component]
pub fn AppStateBadge(state: String) -> impl IntoView {
    let label = match state.as_str() {
        "deploying" => "Deploying",
        "deployed" => "Deployed",
        "failed" => "Failed",
        "deleting" => "Deleting",
        _ => "Unknown",
    };
    view! { <span class=format!("badge app-state-{state}") data-app-state=state.clone()>{label}</span> }
}
