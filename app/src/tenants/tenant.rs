//! `/tenants/:slug`: a tenant and its members; admins add, change and remove members.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::components::{
    confirming, confirming_name, described_by, encode_query_value, invalid, ConfirmStep, ErrorNote,
    FieldError, FormError, KeptFormError, TableHead,
};
use crate::kept::{error_at, value_or, KeptForm};
use crate::tenants::actions::{PutMember, RemoveMember, SetQuota};
use crate::tenants::dto::TenantPageDto;

#[component]
pub fn TenantPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let put = ServerAction::<PutMember>::new();
    let remove = ServerAction::<RemoveMember>::new();
    // Read again after every write (hydrated, a write does not reload the page).
    let page = crate::hydrated::resource(
        move || (slug(), put.version().get(), remove.version().get()),
        |(slug, _, _)| crate::tenants::sfn::tenant_page(slug),
    );
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Tenant page=p put remove /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <Title text="Tenant" /> <h1>"Tenant"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn Tenant(
    page: TenantPageDto,
    put: ServerAction<PutMember>,
    remove: ServerAction<RemoveMember>,
) -> impl IntoView {
    let slug = page.tenant.slug.clone();
    let manage = page.can_manage;
    view! {
        <Title text=page.tenant.display_name.clone() />
        <h1>{page.tenant.display_name.clone()} " " <code class="muted">{slug.clone()}</code></h1>
        {manage.then(|| {
            let members = page.members.iter().map(|m| m.username.clone()).collect();
            view! { <ConfirmRemove tenant=slug.clone() members remove /> }
        })}
        <section class="card" aria-labelledby="members-heading">
            <div class="card-head"><h2 id="members-heading">"Members"</h2></div>
            <FormError />
            <table class="table" id="member-table">
                <TableHead cols=["User", "E-mail", "Role", "Source"].into_iter().chain(manage.then_some("")).collect() />
                <tbody>
                    {page.members.into_iter().map(|m| {
                        let remove_link = format!("/tenants/{}?confirm=remove-member&name={}", encode_query_value(&slug), encode_query_value(&m.username));
                        let key = m.username.clone();
                        view! {
                            <tr data-member=key>
                                <td>{m.username}</td>
                                <td>{m.email.unwrap_or_default()}</td>
                                <td>{m.role}</td>
                                <td title="oidc: from identity-provider groups, recomputed at each login">{m.source}</td>
                                {manage.then(|| view! {
                                    <td><a href=remove_link>"Remove…"</a></td>
                                })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {manage.then({
                let tenant = slug.clone();
                let kept = KeptForm::of(&page.kept, "add-member");
                move || view! { <MemberForm tenant put kept /> }
            })}
        </section>
        <QuotaCard slug=slug.clone() />
    }
}

/// Adds a member or changes a role. The username field offers the known users (a
/// `<datalist>`: suggestions with and without JavaScript) and still takes any name, for
/// someone who will sign in through single sign-on later.
#[component]
fn MemberForm(
    tenant: String,
    put: ServerAction<PutMember>,
    /// The form as it was refused.
    kept: Option<KeptForm>,
) -> impl IntoView {
    let username_error = error_at(&kept, "username");
    let role_error = error_at(&kept, "role");
    let username_invalid = invalid(&username_error);
    let username_described = described_by(
        "member-username",
        Some("member-username-help"),
        &username_error,
    );
    let admin = kept
        .as_ref()
        .is_some_and(|k| k.value("role").as_deref() == Some("admin"));
    let known = crate::hydrated::resource(
        {
            let tenant = tenant.clone();
            move || tenant.clone()
        },
        crate::users::sfn::known_users,
    );
    view! {
        <KeptFormError kept=kept.clone() />
        <ActionForm action=put attr:class="filter wrap" attr:id="add-member">
            <input type="hidden" name="tenant" value=tenant />
            <label for="member-username">"User"</label>
            <input id="member-username" name="username" required maxlength="64" placeholder="username"
                list="known-users" autocomplete="off" value=value_or(&kept, "username", "")
                aria-invalid=username_invalid aria-describedby=username_described />
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let names = known.await.unwrap_or_default();
                    view! {
                        <datalist id="known-users">
                            {names.into_iter().map(|n| view! { <option value=n></option> }).collect_view()}
                        </datalist>
                    }
                })}
            </Suspense>
            <label for="member-role">"Role"</label>
            <select id="member-role" name="role">
                <option value="member" selected=!admin>"member"</option>
                <option value="admin" selected=admin>"admin"</option>
            </select>
            <button type="submit">"Add or change"</button>
            <FieldError input="member-username".to_owned() error=username_error />
            <FieldError input="member-role".to_owned() error=role_error />
            <small id="member-username-help" class="muted">
                "Pick a known user, or type the username of someone who has not signed in yet: "
                "they get this membership at their first single sign-on login under that name. "
                "Operators create local accounts on the " <a href="/admin/users">"Users"</a> " page."
            </small>
        </ActionForm>
    }
}

/// The confirmation of a member's removal (`?confirm=remove-member&name=<user>`).
#[component]
fn ConfirmRemove(
    tenant: String,
    members: Vec<String>,
    remove: ServerAction<RemoveMember>,
) -> impl IntoView {
    let (confirm, name) = (confirming(), confirming_name());
    let cancel = format!("/tenants/{}", encode_query_value(&tenant));
    move || {
        let user = name.get().filter(|u| members.contains(u))?;
        let (tenant, cancel) = (tenant.clone(), cancel.clone());
        (confirm.get().as_deref() == Some("remove-member")).then(|| view! {
            <ConfirmStep id="confirm-remove" title=format!("Remove {user} from {tenant}?") cancel>
                <p>{format!("{user} loses access to the tenant's clusters: their personal kubeconfigs are revoked within a minute. Members who come from identity-provider groups come back at their next login unless they leave the group.")}</p>
                <ActionForm action=remove attr:id="remove-form">
                    <input type="hidden" name="tenant" value=tenant.clone() />
                    <input type="hidden" name="username" value=user.clone() />
                    <button type="submit" class="danger" id="confirm-remove-submit">"Remove member"</button>
                </ActionForm>
            </ConfirmStep>
        })
    }
}

/// The tenant's cluster quota and usage; operators change it here.
#[component]
fn QuotaCard(slug: String) -> impl IntoView {
    let tenant = slug.clone();
    let set = ServerAction::<SetQuota>::new();
    let quota = crate::hydrated::resource(
        move || (tenant.clone(), set.version().get()),
        |(tenant, _)| crate::tenants::sfn::quota(tenant),
    );
    // A refused change comes back as it was typed.
    let kept = crate::hydrated::resource(
        move || set.version().get(),
        |_| crate::kept::take_kept_form(),
    );
    let show = |v: Option<u32>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    let value = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    view! {
        <section class="card" aria-labelledby="quota-heading">
            <div class="card-head"><h2 id="quota-heading">"Cluster quota"</h2></div>
            <Suspense fallback=|| ()>
                {move || {
                    let slug = slug.clone();
                    Suspend::new(async move {
                        let kept = KeptForm::of(&kept.await.ok().flatten(), "quota-form");
                        let field = {
                            let kept = kept.clone();
                            move |name: &str, current: String| value_or(&kept, name, current)
                        };
                        let error = {
                            let kept = kept.clone();
                            move |name: &str| error_at(&kept, name)
                        };
                        // The inputs' attributes and the errors under the form each need one.
                        let error_below = error.clone();
                        match quota.await {
                            Ok(q) => view! {
                                <dl class="facts" id="quota">
                                    <dt>"Clusters"</dt><dd>{format!("{} of {}", q.usage.used_clusters, show(q.usage.quota.max_clusters))}</dd>
                                    <dt>"Nodes"</dt><dd>{format!("{} of {}", q.usage.used_nodes, show(q.usage.quota.max_nodes))}</dd>
                                    <dt>"Shared etcd"</dt><dd id="quota-storage">{q.shared_storage.clone()}</dd>
                                    <dt>"Time-to-live"</dt><dd>{q.usage.quota.cluster_ttl_hours.map_or_else(|| "none".to_owned(), |h| format!("clusters are deleted {h} h after creation"))}</dd>
                                </dl>
                                {q.can_set.then(|| view! {
                                    <KeptFormError kept=kept.clone() />
                                    <ActionForm action=set attr:class="filter wrap" attr:id="quota-form">
                                        <input type="hidden" name="tenant" value=slug />
                                        <label for="q-clusters">"Max clusters"</label>
                                        <input type="number" min="1" id="q-clusters" name="max_clusters" value=field("max_clusters", value(q.usage.quota.max_clusters)) placeholder="unlimited"
                                            aria-invalid=invalid(&error("max_clusters")) aria-describedby=described_by("q-clusters", None, &error("max_clusters")) />
                                        <label for="q-nodes">"Max nodes"</label>
                                        <input type="number" min="1" id="q-nodes" name="max_nodes" value=field("max_nodes", value(q.usage.quota.max_nodes)) placeholder="unlimited"
                                            aria-invalid=invalid(&error("max_nodes")) aria-describedby=described_by("q-nodes", None, &error("max_nodes")) />
                                        <label for="q-ttl">"Time-to-live (hours)"</label>
                                        <input type="number" min="1" id="q-ttl" name="cluster_ttl_hours" value=field("cluster_ttl_hours", value(q.usage.quota.cluster_ttl_hours)) placeholder="none"
                                            aria-invalid=invalid(&error("cluster_ttl_hours")) aria-describedby=described_by("q-ttl", None, &error("cluster_ttl_hours")) />
                                        <label for="q-storage">"Max shared etcd (MiB, or 2 GiB…)"</label>
                                        <input type="text" id="q-storage" name="max_shared_storage" value=field("max_shared_storage", q.shared_storage_input.clone()) placeholder="unlimited" size="10"
                                            aria-invalid=invalid(&error("max_shared_storage")) aria-describedby=described_by("q-storage", None, &error("max_shared_storage")) />
                                        <button type="submit">"Set quota"</button>
                                    </ActionForm>
                                    <FieldError input="q-clusters".to_owned() error=error_below("max_clusters") />
                                    <FieldError input="q-nodes".to_owned() error=error_below("max_nodes") />
                                    <FieldError input="q-ttl".to_owned() error=error_below("cluster_ttl_hours") />
                                    <FieldError input="q-storage".to_owned() error=error_below("max_shared_storage") />
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
