//! `/admin`: operators create tenants and reach every tenant's members.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::components::{ErrorNote, FormError};
use crate::tenants::actions::CreateTenant;

#[component]
pub fn Admin() -> impl IntoView {
    let create = ServerAction::<CreateTenant>::new();
    let tenants = Resource::new(
        move || create.version().get(),
        |_| crate::tenants::sfn::list_tenants(None),
    );
    view! {
        <Title text="Admin" />
        <h1>"Admin"</h1>
        <section class="card" aria-labelledby="people-heading">
            <h2 id="people-heading">"People"</h2>
            <p>
                <A href="/admin/users" attr:id="users-link">"Users"</A>
                ": everyone who can sign in; create local accounts and invite people with a "
                "one-time link. Add them to a tenant on the tenant's page."
            </p>
        </section>
        <section class="card" aria-labelledby="new-tenant-heading">
            <h2 id="new-tenant-heading">"New tenant"</h2>
            <FormError />
            <ActionForm action=create attr:class="filter" attr:id="create-tenant">
                <label for="tenant-slug">"Slug"</label>
                <input id="tenant-slug" name="slug" required maxlength="63" placeholder="team-a"
                    pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" title="lowercase letters, digits and '-'" />
                <label for="tenant-name">"Name"</label>
                <input id="tenant-name" name="display_name" maxlength="100" placeholder="Team A" />
                <button type="submit">"Create tenant"</button>
            </ActionForm>
        </section>
        <section class="card" aria-labelledby="all-tenants-heading">
            <h2 id="all-tenants-heading">"All tenants"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match tenants.await {
                        Ok(list) if list.is_empty() => view! { <p class="empty">"No tenants yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <ul class="tenant-links">
                                {list.into_iter().map(|t| view! {
                                    <li><A href=format!("/tenants/{}", t.slug)>{t.display_name}</A> " " <code class="muted">{t.slug}</code></li>
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
