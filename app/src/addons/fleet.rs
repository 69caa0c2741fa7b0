//! `/fleet/addons`: which addon version runs on which cluster (operators see every tenant,
//! tenant admins their own), clusters counted per version, and for operators the bulk
//! upgrade: an addon (`?addon=`), a version, the clusters running another one.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::addons::actions::{BulkUpgradeAddon, BULK_FORM};
use crate::addons::dto::{BulkOutcomeDto, FleetAddonsDto};
use crate::components::{described_by, invalid, ErrorNote, FieldError, KeptFormError, TableHead};
use crate::fleet::inventory::Chart;
use crate::hydrated::{self, Hydrated};
use crate::kept::KeptForm;

#[component]
pub fn FleetAddons() -> impl IntoView {
    let query = use_query_map();
    let addon = move || query.read().get("addon").filter(|a| !a.is_empty());
    let bulk = ServerAction::<BulkUpgradeAddon>::new();
    let page = crate::hydrated::resource(
        move || (addon(), bulk.version().get()),
        |(a, _)| hydrated::fetch(crate::addons::sfn::fleet_addons_page(a)),
    );
    view! {
        <Title text="Addons · Fleet" />
        <h1>"Fleet: addons"</h1>
        <crate::fleet::FleetTabs />
        <Transition fallback=|| view! { <p class="muted">"Loading addons…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(Hydrated(p)) => view! { <FleetAddonsBody page=p bulk /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn FleetAddonsBody(page: FleetAddonsDto, bulk: ServerAction<BulkUpgradeAddon>) -> impl IntoView {
    let p = page;
    let rows = p.rows.clone();
    view! {
        {p.results.clone().map(|r| view! { <BulkResults outcome=r /> })}
        {p.can_bulk.then(|| view! { <BulkForm page=p.clone() bulk /> })}
        <section class="card" aria-labelledby="addon-versions-heading">
            <div class="card-head"><h2 id="addon-versions-heading">"Clusters per addon version"</h2></div>
            {if p.counts.is_empty() {
                view! { <p class="empty">"KQueen manages no addon yet."</p> }.into_any()
            } else {
                view! {
                    <Chart svg=p.chart.clone() id="chart-addon-versions" />
                    <table class="table" id="addon-version-counts">
                        <TableHead cols=vec!["Addon", "Version", "Clusters"] />
                        <tbody>
                            {p.counts.iter().map(|c| view! {
                                <tr data-addon=c.addon.clone() data-version=c.version.clone()>
                                    <td>{c.addon.clone()}</td><td>{c.version.clone()}</td><td>{c.clusters}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
        <section class="card" aria-labelledby="fleet-addons-heading">
            <div class="card-head"><h2 id="fleet-addons-heading">{format!("{} addon(s) managed by KQueen", rows.len())}</h2></div>
            {if rows.is_empty() {
                view! { <p class="empty">"No cluster runs an addon KQueen installed."</p> }.into_any()
            } else {
                view! {
                    <div class="table-scroll">
                        <table class="table" id="fleet-addons">
                            <TableHead cols=vec!["Addon", "Version", "Tenant", "Cluster", "State", "Upgrade"] />
                            <tbody>
                                {rows.into_iter().map(|r| view! {
                                    <tr data-addon=r.addon.clone() data-cluster=r.cluster.clone() data-version=r.version.clone()>
                                        <th scope="row">{r.addon.clone()}</th>
                                        <td>{r.version.clone()}</td>
                                        <td>{r.tenant.clone()}</td>
                                        <td><a href=format!("/clusters/{}", r.cluster_id)>{r.cluster.clone()}</a></td>
                                        <td><span class=format!("badge addon-record-{}", r.state) data-state=r.state.clone()>{r.state.clone()}</span>
                                            {r.error.clone().map(|e| view! { <br /><small class="error-text">{e}</small> })}</td>
                                        <td>{r.upgrade_available.clone().map(|v| view! { <span class="addon-upgrade">{format!("upgrade available: {v}")}</span> })}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

/// The bulk upgrade (operators): choose the addon (a GET form), then the version and the
/// clusters running an older one, all checked.
#[component]
fn BulkForm(page: FleetAddonsDto, bulk: ServerAction<BulkUpgradeAddon>) -> impl IntoView {
    let kept = KeptForm::of(&page.kept, BULK_FORM);
    let chosen = page.chosen.clone().unwrap_or_default();
    let newest = page.versions.first().cloned().unwrap_or_default();
    let version = crate::kept::value_or(&kept, "version", newest.clone());
    let clusters: Vec<_> = page
        .rows
        .iter()
        .filter(|r| r.addon == chosen && r.upgrade_available.is_some())
        .cloned()
        .collect();
    let clusters_error = crate::kept::error_at(&kept, "clusters");
    let version_error = crate::kept::error_at(&kept, "version");
    view! {
        <section class="card" aria-labelledby="bulk-heading" id="addon-bulk">
            <div class="card-head"><h2 id="bulk-heading">"Upgrade an addon on many clusters"</h2></div>
            <form method="get" action="/fleet/addons" class="filter" id="addon-bulk-choose">
                <label for="bulk-addon">"Addon"</label>
                <select id="bulk-addon" name="addon">
                    {page.addons.iter().map(|a| {
                        let selected = *a == chosen;
                        view! { <option value=a.clone() selected=selected>{a.clone()}</option> }
                    }).collect_view()}
                </select>
                <button type="submit">"Choose"</button>
            </form>
            {page.chosen.clone().map(|addon| view! {
                <KeptFormError kept=kept.clone() />
                <ActionForm action=bulk attr:class="stack" attr:id=BULK_FORM>
                    <input type="hidden" name="addon" value=addon.clone() />
                    <div class="field">
                        <label for="bulk-version">"Version"</label>
                        <select id="bulk-version" name="version" aria-invalid=invalid(&version_error)
                            aria-describedby=described_by("bulk-version", None, &version_error)>
                            {page.versions.iter().map(|v| {
                                let selected = *v == version;
                                view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
                            }).collect_view()}
                        </select>
                        <FieldError input="bulk-version".to_owned() error=version_error.clone() />
                    </div>
                    <fieldset class="addon-clusters" id="bulk-clusters" aria-describedby=described_by("bulk-clusters", None, &clusters_error)>
                        <legend>{format!("Clusters running an older {addon}")}</legend>
                        {if clusters.is_empty() {
                            view! { <p class="empty" id="bulk-none">"Every cluster runs the newest version."</p> }.into_any()
                        } else {
                            clusters.iter().map(|r| {
                                let input = crate::addons::actions::cluster_input(&r.cluster_id);
                                let checked = crate::kept::checked_or(&kept, &input, true);
                                let id = format!("bulk-c-{}", r.cluster_id);
                                view! {
                                    <label class="addon-check" for=id.clone()>
                                        <input type="checkbox" id=id.clone() name=input value="true" checked=checked data-cluster=r.cluster.clone() />
                                        {format!(" {}/{} (runs {})", r.tenant, r.cluster, r.version)}
                                    </label>
                                }
                            }).collect_view().into_any()
                        }}
                        <FieldError input="bulk-clusters".to_owned() error=clusters_error.clone() />
                    </fieldset>
                    <button type="submit" id="bulk-submit">"Upgrade the checked clusters"</button>
                </ActionForm>
            })}
        </section>
    }
}

/// What the last bulk upgrade did, one row per cluster.
#[component]
fn BulkResults(outcome: BulkOutcomeDto) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="bulk-results-heading" id="bulk-results">
            <div class="card-head"><h2 id="bulk-results-heading">{format!("Upgrade of {} to {}", outcome.addon, outcome.version)}</h2></div>
            <table class="table" id="bulk-result-table">
                <TableHead cols=vec!["Cluster", "Result"] />
                <tbody>
                    {outcome.results.into_iter().map(|r| {
                        let queued = r.operation.is_some();
                        view! {
                            <tr data-cluster=r.cluster.clone() data-queued=queued.to_string()>
                                <th scope="row"><a href=format!("/clusters/{}", r.cluster_id)>{r.cluster.clone()}</a></th>
                                <td>{match r.error {
                                    Some(e) => view! { <span class="error-text">{format!("not queued: {e}")}</span> }.into_any(),
                                    None => view! { <span>"queued"</span> }.into_any(),
                                }}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
