//! `/tenants/:slug`: a tenant and its members; admins add, change and remove members.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::components::{ErrorNote, FormError};
use crate::tenants::dto::TenantPageDto;

#[component]
pub fn TenantPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let page = Resource::new(slug, crate::tenants::sfn::tenant_page);
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Tenant page=p /> }.into_any(),
                    Err(e) => view! { <Title text="Tenant" /> <h1>"Tenant"</h1> <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Tenant(page: TenantPageDto) -> impl IntoView {
    let slug = page.tenant.slug.clone();
    let manage = page.can_manage;
    let add_action = format!("/tenants/{slug}/members");
    let remove_action = format!("/tenants/{slug}/members/remove");
    view! {
        <Title text=page.tenant.display_name.clone() />
        <h1>{page.tenant.display_name.clone()} " " <code class="muted">{slug.clone()}</code></h1>
        <section class="card" aria-labelledby="members-heading">
            <div class="card-head"><h2 id="members-heading">"Members"</h2></div>
            <FormError />
            <table class="table" id="member-table">
                <thead>
                    <tr>
                        <th scope="col">"User"</th>
                        <th scope="col">"E-mail"</th>
                        <th scope="col">"Role"</th>
                        <th scope="col">"Source"</th>
                        {manage.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                    </tr>
                </thead>
                <tbody>
                    {page.members.into_iter().map(|m| {
                        let remove_action = remove_action.clone();
                        let user = m.username.clone();
                        let key = m.username.clone();
                        view! {
                            <tr data-member=key>
                                <td>{m.username}</td>
                                <td>{m.email.unwrap_or_default()}</td>
                                <td>{m.role}</td>
                                <td title="oidc: from identity-provider groups, recomputed at each login">{m.source}</td>
                                {manage.then(|| view! {
                                    <td>
                                        <form method="post" action=remove_action>
                                            <input type="hidden" name="username" value=user />
                                            <button type="submit" class="link-button">"Remove"</button>
                                        </form>
                                    </td>
                                })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {manage.then(|| view! {
                <form method="post" action=add_action class="filter" id="add-member">
                    <label for="member-username">"User"</label>
                    <input id="member-username" name="username" required maxlength="64" placeholder="username" />
                    <label for="member-role">"Role"</label>
                    <select id="member-role" name="role">
                        <option value="member">"member"</option>
                        <option value="admin">"admin"</option>
                    </select>
                    <button type="submit">"Add or change"</button>
                </form>
            })}
        </section>
        <QuotaCard slug=slug.clone() />
    }
}

/// The tenant's cluster quota and usage; operators change it here.
#[component]
fn QuotaCard(slug: String) -> impl IntoView {
    let tenant = slug.clone();
    let quota = Resource::new(move || tenant.clone(), crate::tenants::sfn::quota);
    let action = format!("/tenants/{slug}/quota");
    let show = |v: Option<u32>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    let value = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    view! {
        <section class="card" aria-labelledby="quota-heading">
            <div class="card-head"><h2 id="quota-heading">"Cluster quota"</h2></div>
            <Suspense fallback=|| ()>
                {move || {
                    let action = action.clone();
                    Suspend::new(async move {
                        match quota.await {
                            Ok(q) => view! {
                                <dl class="facts" id="quota">
                                    <dt>"Clusters"</dt><dd>{format!("{} of {}", q.used_clusters, show(q.max_clusters))}</dd>
                                    <dt>"Nodes"</dt><dd>{format!("{} of {}", q.used_nodes, show(q.max_nodes))}</dd>
                                    <dt>"Time-to-live"</dt><dd>{q.cluster_ttl_hours.map_or_else(|| "none".to_owned(), |h| format!("clusters are deleted {h} h after creation"))}</dd>
                                </dl>
                                {q.can_set.then(|| view! {
                                    <form method="post" action=action class="filter wrap" id="quota-form">
                                        <label for="q-clusters">"Max clusters"</label>
                                        <input type="number" min="1" id="q-clusters" name="max_clusters" value=value(q.max_clusters) placeholder="unlimited" />
                                        <label for="q-nodes">"Max nodes"</label>
                                        <input type="number" min="1" id="q-nodes" name="max_nodes" value=value(q.max_nodes) placeholder="unlimited" />
                                        <label for="q-ttl">"Time-to-live (hours)"</label>
                                        <input type="number" min="1" id="q-ttl" name="cluster_ttl_hours" value=value(q.cluster_ttl_hours) placeholder="none" />
                                        <button type="submit">"Set quota"</button>
                                    </form>
                                })}
                            }.into_any(),
                            Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                        }
                    })
                }}
            </Suspense>
        </section>
    }
}
