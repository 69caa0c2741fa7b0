//! `/providers` (operators): providers (a provisioner backend and its settings, secrets in
//! the vault) and templates (what tenants may request from a provider). Forms are rendered
//! from the provisioner's schemas: the providers' in `provider_form.rs`, the templates' in
//! `template_form.rs`, a template's refinement inputs in `refine_view.rs`.

use kqueen_dto::kinds::ProviderKind;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::components::{
    confirming, confirming_name, ConfirmStep, ErrorNote, FormError, ListCard, TableHead,
};
use crate::kept::KeptForm;
use crate::providers::actions::{DeleteProvider, DeleteTemplate, SaveProvider, SaveTemplate};
use crate::providers::dto::ProvidersPageDto;
use crate::providers::provider_form::{kind_label, ProviderForm, ProviderRow};
use crate::providers::template_form::{template_step, TemplateForm, TemplateRow};

#[component]
pub fn Providers() -> impl IntoView {
    let writes = CatalogWrites::new();
    // The forms follow the URL (`kind`, `edit`, `template`): hydrated, choosing a kind or an
    // entry to edit navigates in place, and the page renders again for it.
    let q = use_query_map();
    let form_query = move || {
        let q = q.read();
        (q.get("kind"), q.get("edit"), q.get("template"))
    };
    let page = crate::hydrated::resource(
        move || (writes.version(), form_query()),
        |_| crate::providers::sfn::providers_page(),
    );
    view! {
        <Title text="Providers" />
        <h1>"Providers and templates"</h1>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Catalog page=p writes /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Catalog(page: ProvidersPageDto, writes: CatalogWrites) -> impl IntoView {
    let q = use_query_map();
    let kind = q.read_untracked().get("kind").filter(|k| !k.is_empty());
    let edit = q.read_untracked().get("edit").filter(|k| !k.is_empty());
    // The template form's provider step without JavaScript (`?step=template`) carries the
    // form's values, the template being edited as `original`.
    let step = template_step(&q.read_untracked());
    let edit_template = q
        .read_untracked()
        .get("template")
        .or_else(|| step.as_ref().and_then(|s| s.value("original")))
        .filter(|k| !k.is_empty());
    let editing = edit.and_then(|n| page.providers.iter().find(|p| p.name == n).cloned());
    let editing_template =
        edit_template.and_then(|n| page.templates.iter().find(|t| t.name == n).cloned());
    let form_kind = editing
        .as_ref()
        .map(|p| p.kind)
        .or_else(|| kind.as_deref().and_then(ProviderKind::parse));
    let kind_dto = form_kind.and_then(|k| page.kinds.iter().find(|d| d.kind == k).cloned());
    let provider_names: Vec<(String, ProviderKind)> = page
        .providers
        .iter()
        .map(|p| (p.name.clone(), p.kind))
        .collect();
    let kinds_for_rows = page.kinds.clone();
    let uses: Vec<(String, String)> = page
        .templates
        .iter()
        .map(|t| (t.provider.clone(), t.name.clone()))
        .collect();
    view! {
        <FormError />
        <ConfirmDelete uses writes />
        <ListCard name="providers" heading="Providers" empty="No provider yet. Add one below." is_empty=page.providers.is_empty()>
            <table class="table" id="provider-table">
                <TableHead cols=vec!["Name", "Kind", "Settings", "Secrets", "Status", ""] />
                <tbody>
                    {page.providers.iter().cloned().map(|p| {
                        let params = kinds_for_rows.iter().find(|k| k.kind == p.kind).map(|k| k.provider_schema.clone()).unwrap_or_default();
                        view! { <ProviderRow p params /> }
                    }).collect_view()}
                </tbody>
            </table>
        </ListCard>
        <section class="card" aria-labelledby="provider-form-heading">
            <div class="card-head"><h2 id="provider-form-heading">{if editing.is_some() { "Edit provider" } else { "Add a provider" }}</h2></div>
            {editing.is_none().then(|| {
                let kinds = page.kinds.clone();
                view! {
                <Form method="get" action="/providers" attr:class="filter" attr:id="provider-kind">
                    <label for="kind">"Kind"</label>
                    <select id="kind" name="kind">
                        {kinds.iter().map(|k| {
                            let selected = form_kind == Some(k.kind);
                            view! { <option value=k.kind.as_str() selected=selected>{kind_label(k.kind)}</option> }
                        }).collect_view()}
                    </select>
                    // Named: the router's Form sends the button too (an unnamed one as `&=`).
                    <button type="submit" name="step" value="settings">"Choose"</button>
                </Form>
            }})}
            {kind_dto.map(|k| view! { <ProviderForm kind=k existing=editing.clone() save=writes.save_provider kept=KeptForm::of(&page.kept, "provider-form") /> })}
        </section>
        <ListCard name="templates" heading="Templates" empty="No template yet: tenants cannot request clusters until one exists." is_empty=page.templates.is_empty()>
            <table class="table" id="template-table">
                <TableHead cols=vec!["Name", "Provider", "Request form", "Offered to", "Timeout", "Tenant admins", "Status", ""] />
                <tbody>
                    {page.templates.iter().cloned().map(|t| view! { <TemplateRow t /> }).collect_view()}
                </tbody>
            </table>
        </ListCard>
        <section class="card" aria-labelledby="template-form-heading">
            <div class="card-head"><h2 id="template-form-heading">{if editing_template.is_some() { "Edit template" } else { "Add a template" }}</h2></div>
            {if provider_names.is_empty() {
                view! { <p class="muted">"Add a provider first."</p> }.into_any()
            } else {
                let kept = KeptForm::of(&page.kept, "template-form").or(step);
                view! { <TemplateForm providers=provider_names kinds=page.kinds.clone() existing=editing_template save=writes.save_template kept /> }.into_any()
            }}
        </section>
    }
}

/// The confirmation of a provider's or a template's delete (`?confirm=delete-provider` or
/// `delete-template`, `&name=`). `uses`: (provider, template) pairs, to say what a provider's
/// delete would meet.
#[component]
fn ConfirmDelete(uses: Vec<(String, String)>, writes: CatalogWrites) -> impl IntoView {
    let (confirm, name) = (confirming(), confirming_name());
    move || {
        let name = name.get()?;
        let cancel = "/providers".to_owned();
        match confirm.get().as_deref()? {
            "delete-provider" => {
                let templates: Vec<_> = uses.iter().filter(|(p, _)| *p == name).map(|(_, t)| t.clone()).collect();
                let note = if templates.is_empty() {
                    "No template uses it. Its settings and stored secrets are deleted; this cannot be undone.".to_owned()
                } else {
                    format!("Templates use it ({}): delete them first, or the delete is refused.", templates.join(", "))
                };
                Some(view! {
                    <ConfirmStep id="confirm-delete" title=format!("Delete provider {name}?") cancel>
                        <p>{note}</p>
                        <ActionForm action=writes.delete_provider attr:id="delete-form">
                            <input type="hidden" name="name" value=name.clone() />
                            <button type="submit" class="danger" id="confirm-delete-submit">"Delete provider"</button>
                        </ActionForm>
                    </ConfirmStep>
                }.into_any())
            }
            "delete-template" => Some(view! {
                <ConfirmStep id="confirm-delete" title=format!("Delete template {name}?") cancel>
                    <p>"Tenants can no longer request clusters from it; this cannot be undone."</p>
                    <ActionForm action=writes.delete_template attr:id="delete-form">
                        <input type="hidden" name="name" value=name.clone() />
                        <button type="submit" class="danger" id="confirm-delete-submit">"Delete template"</button>
                    </ActionForm>
                </ConfirmStep>
            }.into_any()),
            _ => None,
        }
    }
}

/// The page's writes. Every one ends by reading the page again (hydrated, a write does not
/// reload the page).
#[derive(Clone, Copy)]
pub(super) struct CatalogWrites {
    save_provider: ServerAction<SaveProvider>,
    delete_provider: ServerAction<DeleteProvider>,
    save_template: ServerAction<SaveTemplate>,
    delete_template: ServerAction<DeleteTemplate>,
}

impl CatalogWrites {
    fn new() -> Self {
        Self {
            save_provider: ServerAction::new(),
            delete_provider: ServerAction::new(),
            save_template: ServerAction::new(),
            delete_template: ServerAction::new(),
        }
    }

    /// Changes whenever one of them finishes.
    fn version(&self) -> usize {
        self.save_provider.version().get()
            + self.delete_provider.version().get()
            + self.save_template.version().get()
            + self.delete_template.version().get()
    }
}
