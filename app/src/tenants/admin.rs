//! `/admin`: operators create tenants and reach every tenant's members.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::components::{described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError};
use crate::kept::{error_at, value_or, KeptForm};
use crate::tenants::actions::CreateTenant;

#[component]
pub fn Admin() -> impl IntoView {
    let create = ServerAction::<CreateTenant>::new();
    let tenants = crate::hydrated::resource(
        move || create.version().get(),
        |_| crate::tenants::sfn::list_tenants(None),
    );
    // A refused create comes back as it was typed.
    let kept = crate::hydrated::resource(
        move || create.version().get(),
        |_| crate::kept::take_kept_form(),
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
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let kept = KeptForm::of(&kept.await.ok().flatten(), "create-tenant");
                    let (slug_error, name_error) = (error_at(&kept, "slug"), error_at(&kept, "display_name"));
                    let (slug_invalid, name_invalid) = (invalid(&slug_error), invalid(&name_error));
                    let slug_described = described_by("tenant-slug", None, &slug_error);
                    let name_described = described_by("tenant-name", None, &name_error);
                    view! {
                        <KeptFormError kept=kept.clone() />
                        <ActionForm action=create attr:class="filter" attr:id="create-tenant">
                            <label for="tenant-slug">"Slug"</label>
                            <input id="tenant-slug" name="slug" required maxlength="63" placeholder="team-a"
                                pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" title="lowercase letters, digits and '-'"
                                value=value_or(&kept, "slug", "")
                                aria-invalid=slug_invalid aria-describedby=slug_described />
                            <label for="tenant-name">"Name"</label>
                            <input id="tenant-name" name="display_name" maxlength="100" placeholder="Team A"
                                value=value_or(&kept, "display_name", "")
                                aria-invalid=name_invalid aria-describedby=name_described />
                            <button type="submit">"Create tenant"</button>
                        </ActionForm>
                        <FieldError input="tenant-slug".to_owned() error=slug_error />
                        <FieldError input="tenant-name".to_owned() error=name_error />
                    }
                })}
            </Suspense>
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
