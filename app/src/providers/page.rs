//! `/providers` (operators): providers (a provisioner backend and its settings, secrets in
//! the vault) and templates (what tenants may request from a provider). Forms are rendered
//! from the provisioner's schemas.

use std::collections::BTreeMap;

use kqueen_dto::kinds::ProviderKind;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::clusters::dto::ParamDto;
use crate::clusters::request::ParamField;
use crate::components::{
    confirming, confirming_name, described_by, encode_query_value, invalid, ConfirmStep, ErrorNote,
    FieldError, FormError, KeptFormError, ListCard, TableHead,
};
use crate::kept::{checked_or, error_at, value_or, KeptForm};
use crate::providers::actions::{DeleteProvider, DeleteTemplate, SaveProvider, SaveTemplate};
use crate::providers::dto::{KindDto, ProviderDto, ProvidersPageDto, TemplateDto};
use crate::providers::refine;

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
    let page = Resource::new(
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
    let form_kind = editing.as_ref().map(|p| p.kind.clone()).or(kind);
    let kind_dto = form_kind
        .as_ref()
        .and_then(|k| page.kinds.iter().find(|d| &d.kind == k).cloned());
    let provider_names: Vec<(String, String)> = page
        .providers
        .iter()
        .map(|p| (p.name.clone(), p.kind.clone()))
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
                        let params = kinds_for_rows.iter().find(|k| k.kind == p.kind).map(|k| k.provider_params.clone()).unwrap_or_default();
                        view! { <ProviderRow p params /> }
                    }).collect_view()}
                </tbody>
            </table>
        </ListCard>
        <section class="card" aria-labelledby="provider-form-heading">
            <div class="card-head"><h2 id="provider-form-heading">{if editing.is_some() { "Edit provider" } else { "Add a provider" }}</h2></div>
            {editing.is_none().then(|| {
                let kinds = page.kinds.clone();
                let form_kind = form_kind.clone();
                view! {
                <Form method="get" action="/providers" attr:class="filter" attr:id="provider-kind">
                    <label for="kind">"Kind"</label>
                    <select id="kind" name="kind">
                        {kinds.iter().map(|k| {
                            let selected = form_kind.as_deref() == Some(k.kind.as_str());
                            view! { <option value=k.kind.clone() selected=selected>{kind_label(&k.kind)}</option> }
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

fn kind_label(kind: &str) -> String {
    ProviderKind::parse(kind).map_or_else(|| kind.to_owned(), |k| format!("{k} — {}", k.summary()))
}

#[component]
fn ProviderRow(
    p: ProviderDto,
    /// The kind's settings, for their labels and types.
    params: Vec<ParamDto>,
) -> impl IntoView {
    // Each setting by its label; empty ones are left out, yes/no settings read as such.
    let settings: Vec<(String, String)> = p
        .settings
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| {
            let spec = params.iter().find(|s| s.name == *k);
            let label = spec.map_or_else(|| k.clone(), |s| s.label.clone());
            let value = match (spec.map(|s| s.kind.as_str()), v.as_str()) {
                (Some("boolean"), "true") => "yes".to_owned(),
                (Some("boolean"), "false") => "no".to_owned(),
                _ => v.clone(),
            };
            (label, value)
        })
        .collect();
    let name = p.name.clone();
    let edit = format!("/providers?edit={}", p.name);
    let adopts = ProviderKind::parse(&p.kind) == Some(ProviderKind::ClusterApi);
    view! {
        <tr data-provider=p.name.clone()>
            <td>{p.name.clone()}{(!p.description.is_empty()).then(|| view! { <br /><small class="muted">{p.description.clone()}</small> })}</td>
            <td>{p.kind}</td>
            <td>
                {if settings.is_empty() {
                    view! { <small class="muted">"–"</small> }.into_any()
                } else {
                    view! {
                        <dl class="settings">
                            {settings.into_iter().map(|(label, value)| view! { <dt>{label}</dt><dd><code>{value}</code></dd> }).collect_view()}
                        </dl>
                    }.into_any()
                }}
            </td>
            <td><small>{if p.secret_fields.is_empty() { "–".to_owned() } else { format!("{} (set)", p.secret_fields.join(", ")) }}</small></td>
            <td>{if p.disabled { "disabled" } else { "enabled" }}</td>
            <td class="actions">
                <a href=edit>"Edit"</a>
                // Kinds whose infrastructure holds clusters KQueen can adopt.
                {adopts.then(|| view! {
                    <a href=format!("/providers/{}/clusters", encode_query_value(&name))>"Existing clusters"</a>
                })}
                <a href=format!("/providers?confirm=delete-provider&name={}", encode_query_value(&name))>"Delete…"</a>
            </td>
        </tr>
    }
}

#[component]
fn ProviderForm(
    kind: KindDto,
    existing: Option<ProviderDto>,
    save: ServerAction<SaveProvider>,
    /// The form as it was refused.
    kept: Option<KeptForm>,
) -> impl IntoView {
    let original = existing
        .as_ref()
        .map(|p| p.name.clone())
        .unwrap_or_default();
    let value_of = {
        let (existing, kept) = (existing.clone(), kept.clone());
        move |param: &ParamDto| -> Option<String> {
            if let Some(k) = &kept {
                return k.value(&format!("s[{}]", param.name));
            }
            existing.as_ref().and_then(|p| {
                p.settings
                    .iter()
                    .find(|(k, _)| *k == param.name)
                    .map(|(_, v)| v.clone())
            })
        }
    };
    let caps = &kind.capabilities;
    let can = [
        (caps.scale, "scale"),
        (caps.upgrade, "upgrade"),
        (caps.deletes_infrastructure, "delete infrastructure"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| *n)
    .collect::<Vec<_>>()
    .join(", ");
    let is_edit = existing.is_some();
    let name = value_or(
        &kept,
        "name",
        existing
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_default(),
    );
    let description = value_or(
        &kept,
        "description",
        existing
            .as_ref()
            .map(|p| p.description.clone())
            .unwrap_or_default(),
    );
    let disabled = checked_or(
        &kept,
        "disabled",
        existing.as_ref().is_some_and(|p| p.disabled),
    );
    let (name_error, description_error) = (error_at(&kept, "name"), error_at(&kept, "description"));
    let (name_invalid, description_invalid) = (invalid(&name_error), invalid(&description_error));
    let name_described = described_by("provider-name", None, &name_error);
    let description_described = described_by("provider-description", None, &description_error);
    view! {
        <KeptFormError kept=kept.clone() />
        <ActionForm action=save attr:class="stack" attr:id="provider-form">
            <input type="hidden" name="original" value=original />
            <input type="hidden" name="kind" value=kind.kind.clone() />
            <p class="muted">{format!("Kind {}: create, delete{}{}", kind.kind, if can.is_empty() { "" } else { ", " }, can)}</p>
            <div class="field">
                <label for="provider-name">"Name"</label>
                <input id="provider-name" name="name" required maxlength="63" value=name
                    aria-invalid=name_invalid aria-describedby=name_described />
                <FieldError input="provider-name".to_owned() error=name_error />
            </div>
            <div class="field">
                <label for="provider-description">"Description"</label>
                <input id="provider-description" name="description" maxlength="500" value=description
                    aria-invalid=description_invalid aria-describedby=description_described />
                <FieldError input="provider-description".to_owned() error=description_error />
            </div>
            {kind.provider_params.iter().cloned().map(|mut p| {
                let value = value_of(&p);
                let error = error_at(&kept, &format!("s[{}]", p.name));
                if p.secret && is_edit {
                    p.required = false;
                    p.help = Some(format!("{} Leave empty to keep the stored value.", p.help.unwrap_or_default()));
                }
                view! { <ParamField param=p prefix="s" value=value error=error /> }
            }).collect_view()}
            <div class="field">
                <label><input type="checkbox" name="disabled" value="true" checked=disabled />" Disabled (no new clusters)"</label>
            </div>
            <button type="submit" id="provider-submit">{if is_edit { "Save provider" } else { "Add provider" }}</button>
        </ActionForm>
    }
}

#[component]
fn TemplateRow(t: TemplateDto) -> impl IntoView {
    let name = t.name.clone();
    let edit = format!("/providers?template={}", t.name);
    let form = t
        .params
        .iter()
        .map(|p| match p.kind.as_str() {
            "integer" => format!(
                "{} ({}–{})",
                p.name,
                p.min.map_or("…".into(), |v| v.to_string()),
                p.max.map_or("…".into(), |v| v.to_string())
            ),
            "enum" => format!("{} [{}]", p.name, p.options.join("|")),
            _ => p.name.clone(),
        })
        .chain(t.fixed.iter().map(|(k, v)| format!("{k}={v} (fixed)")))
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <tr data-template=t.name.clone()>
            <td>{t.name.clone()}{(!t.description.is_empty()).then(|| view! { <br /><small class="muted">{t.description.clone()}</small> })}</td>
            <td>{format!("{} ({})", t.provider, t.kind)}</td>
            <td><small>{form}</small></td>
            <td>{if t.tenants.is_empty() { "every tenant".to_owned() } else { t.tenants.join(", ") }}</td>
            <td>{format!("{} min", t.timeout_minutes)}</td>
            <td class="admin-access">{if t.admin_access == "cluster-admin" { "cluster-admin" } else { "admin in the tenant's namespaces" }}</td>
            <td>{if t.disabled { "disabled" } else { "enabled" }}</td>
            <td class="actions">
                <a href=edit>"Edit"</a>
                <a href=format!("/providers?confirm=delete-template&name={}", encode_query_value(&name))>"Delete…"</a>
            </td>
        </tr>
    }
}

/// The template form's values carried by its provider step without JavaScript: the "Show
/// its parameters" button sends the form to `/providers` with `step=template` and the chosen
/// `template_provider`. The refinements typed for another provider do not apply to this one.
fn template_step(q: &leptos_router::params::ParamsMap) -> Option<KeptForm> {
    let chosen = q.get("template_provider").filter(|p| !p.is_empty())?;
    let mut values: BTreeMap<String, String> = if q.get("step").as_deref() == Some("template") {
        q.into_iter()
            .map(|(k, v)| (k.to_string(), v.to_owned()))
            .collect()
    } else {
        BTreeMap::new()
    };
    if values.get("o_for") != Some(&chosen) {
        values.retain(|k, _| !k.starts_with("o["));
    }
    values.insert("o_for".into(), chosen.clone());
    values.insert("template_provider".into(), chosen);
    values
        .entry("timeout_minutes".into())
        .or_insert_with(|| "60".into());
    Some(KeptForm {
        form: "template-form".into(),
        values,
        field: None,
        message: String::new(),
    })
}

/// The template form. `kept`: the form as it was refused, or carried by its provider step.
/// The refinements are rendered from the cluster schema of the provider they are for (`o_for`):
/// hydrated, choosing another provider shows its parameters in place.
#[component]
fn TemplateForm(
    providers: Vec<(String, String)>,
    kinds: Vec<KindDto>,
    existing: Option<TemplateDto>,
    save: ServerAction<SaveTemplate>,
    kept: Option<KeptForm>,
) -> impl IntoView {
    let original = existing
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let first = providers
        .first()
        .map(|(n, _)| n.clone())
        .unwrap_or_default();
    let existing_provider = existing.as_ref().map(|t| t.provider.clone());
    let initial = value_or(&kept, "o_for", existing_provider.clone().unwrap_or(first));
    let selected = value_or(&kept, "template_provider", initial.clone());
    let shown = RwSignal::new(initial.clone());
    let wide = value_or(
        &kept,
        "admin_access",
        existing
            .as_ref()
            .map(|t| t.admin_access.clone())
            .unwrap_or_default(),
    ) == "cluster-admin";
    let text = |name: &str, of: &dyn Fn(&TemplateDto) -> String| {
        value_or(&kept, name, existing.as_ref().map(of).unwrap_or_default())
    };
    let name = text("name", &|t| t.name.clone());
    let description = text("description", &|t| t.description.clone());
    let tenants = text("tenants", &|t| t.tenants.join(", "));
    let timeout = value_or(
        &kept,
        "timeout_minutes",
        existing
            .as_ref()
            .map_or_else(|| "60".to_owned(), |t| t.timeout_minutes.to_string()),
    );
    let json = text("overrides", &|t| t.overrides.clone());
    let json_was = text("overrides_was", &|t| t.overrides.clone());
    let disabled = checked_or(
        &kept,
        "disabled",
        existing.as_ref().is_some_and(|t| t.disabled),
    );
    let err = |input: &str| error_at(&kept, input);
    let (name_error, provider_error, description_error) =
        (err("name"), err("template_provider"), err("description"));
    let (tenants_error, timeout_error, access_error, json_error) = (
        err("tenants"),
        err("timeout_minutes"),
        err("admin_access"),
        err("overrides"),
    );
    let json_open = json_error.is_some() || json.trim() != json_was.trim();
    // The refinement inputs as kept, when the kept form has them for the provider shown.
    let kept_refinements = kept
        .clone()
        .filter(|k| k.values.keys().any(|name| name.starts_with("o[")));
    let is_edit = existing.is_some();
    let refinements = {
        let providers = providers.clone();
        move || {
            let provider = shown.get();
            let kind = providers
                .iter()
                .find(|(n, _)| *n == provider)
                .map(|(_, k)| k.clone())
                .unwrap_or_default();
            let schema = kinds
                .iter()
                .find(|k| k.kind == kind)
                .map(|k| k.cluster_params.clone())
                .unwrap_or_default();
            let (values, errors) = match &kept_refinements {
                Some(k) if provider == initial => (k.values.clone(), Some(k.clone())),
                _ => {
                    let mine = existing
                        .as_ref()
                        .filter(|t| t.provider == provider)
                        .map(|t| t.refinements.clone())
                        .unwrap_or_default();
                    (refine::fields_from_refinements(&mine, &schema), None)
                }
            };
            view! {
                <input type="hidden" name="o_for" value=provider.clone() />
                <p class="muted" id="refinements-help">
                    {format!("What tenants may ask of {provider} ({kind}): leave a field empty to keep what the provider offers. A range may only narrow; a fixed value is not asked.")}
                </p>
                {schema.iter().map(|p| refine_param(p, &values, &errors)).collect_view()}
            }
        }
    };
    view! {
        <KeptFormError kept=kept.clone().filter(|k| !k.message.is_empty()) />
        <ActionForm action=save attr:class="stack" attr:id="template-form">
            // The form's default button (Enter in a field saves; the provider step's button
            // comes first in the form).
            <button type="submit" class="visually-hidden" tabindex="-1" aria-hidden="true">"Save"</button>
            <input type="hidden" name="original" value=original />
            <div class="field">
                <label for="template-name">"Name"</label>
                <input id="template-name" name="name" required maxlength="63" value=name
                    aria-invalid=invalid(&name_error)
                    aria-describedby=described_by("template-name", None, &name_error) />
                <FieldError input="template-name".to_owned() error=name_error />
            </div>
            <div class="field">
                <label for="template-provider">"Provider"</label>
                <select id="template-provider" name="template_provider"
                    aria-invalid=invalid(&provider_error)
                    aria-describedby=described_by("template-provider", None, &provider_error)
                    on:change=move |ev| shown.set(event_target_value(&ev))>
                    {providers.into_iter().map(|(name, kind)| {
                        let is = selected == name;
                        view! { <option value=name.clone() selected=is>{format!("{name} ({kind})")}</option> }
                    }).collect_view()}
                </select>
                <FieldError input="template-provider".to_owned() error=provider_error />
                // Without JavaScript: the page again, with this provider's parameters and
                // the values typed so far. Hydrated, choosing a provider shows them in place.
                <button type="submit" id="template-provider-step" class="secondary" formmethod="get" formaction="/providers"
                    formnovalidate name="step" value="template" on:click=|ev| ev.prevent_default()>
                    "Show its parameters"
                </button>
            </div>
            <div class="field">
                <label for="template-description">"Description"</label>
                <input id="template-description" name="description" maxlength="500" value=description
                    aria-invalid=invalid(&description_error)
                    aria-describedby=described_by("template-description", None, &description_error) />
                <FieldError input="template-description".to_owned() error=description_error />
            </div>
            <fieldset class="refinements" id="template-refinements">
                <legend>"Parameter refinements"</legend>
                {refinements}
            </fieldset>
            <details id="template-json" open=json_open>
                <summary>"Advanced: refinements as JSON"</summary>
                <div class="field">
                    <label for="template-overrides">"Refinements (JSON)"</label>
                    <textarea id="template-overrides" name="overrides" rows="6" spellcheck="false"
                        aria-invalid=invalid(&json_error)
                        aria-describedby=described_by("template-overrides", Some("overrides-help"), &json_error)>
                        {json}
                    </textarea>
                    <input type="hidden" name="overrides_was" value=json_was />
                    <FieldError input="template-overrides".to_owned() error=json_error />
                    <small id="overrides-help" class="muted">
                        "One entry per parameter, with default, min, max (whole numbers), options (a subset of a choice's, or choices for a text) or fixed. Which one is saved: this JSON when you changed it and it is not empty, else the form above. If you change both and they say different things, nothing is saved and both stay as you left them. To remove every refinement, clear them in the form."
                    </small>
                </div>
            </details>
            <div class="field">
                <label for="template-tenants">"Offered to tenants"</label>
                <input id="template-tenants" name="tenants" placeholder="team-a, team-b (empty: every tenant)" value=tenants
                    aria-invalid=invalid(&tenants_error)
                    aria-describedby=described_by("template-tenants", None, &tenants_error) />
                <FieldError input="template-tenants".to_owned() error=tenants_error />
            </div>
            <div class="field">
                <label for="template-timeout">"Timeout (minutes)"</label>
                <input type="number" id="template-timeout" name="timeout_minutes" min="1" max="10080" value=timeout
                    aria-invalid=invalid(&timeout_error)
                    aria-describedby=described_by("template-timeout", None, &timeout_error) />
                <FieldError input="template-timeout".to_owned() error=timeout_error />
            </div>
            <div class="field">
                <label for="template-admin-access">"Tenant admins' kubeconfigs"</label>
                <select id="template-admin-access" name="admin_access"
                    aria-invalid=invalid(&access_error)
                    aria-describedby=described_by("template-admin-access", Some("admin-access-help"), &access_error)>
                    <option value="namespaced" selected=!wide>"admin in the tenant's namespaces (default)"</option>
                    <option value="cluster-admin" selected=wide>"cluster-admin on the whole cluster"</option>
                </select>
                <FieldError input="template-admin-access".to_owned() error=access_error />
                <small id="admin-access-help" class="muted">
                    "Members always get edit in the tenant's namespaces only (never kube-system, kqueen-users or namespaces KQueen owns). Give tenant admins cluster-admin only for clusters the tenant owns outright, e.g. hosted control planes; existing clusters follow within a minute."
                </small>
            </div>
            <div class="field">
                <label><input type="checkbox" name="disabled" value="true" checked=disabled />" Disabled (not offered)"</label>
            </div>
            <button type="submit" id="template-submit">{if is_edit { "Save template" } else { "Add template" }}</button>
        </ActionForm>
    }
}

/// The refinement inputs of one cluster parameter (ids `r-<parameter>-<field>`), with
/// `values` by input name and the errors of `kept`.
fn refine_param(
    p: &ParamDto,
    values: &BTreeMap<String, String>,
    kept: &Option<KeptForm>,
) -> AnyView {
    let fields = refine::fields_of(p);
    if fields.is_empty() {
        return view! {
            <p class="muted" data-refine=p.name.clone()>{format!("{} ({}): a secret, asked of every request.", p.label, p.name)}</p>
        }
        .into_any();
    }
    let param = p.name.clone();
    let value = |field: &str| {
        values
            .get(&refine::input(&param, field))
            .cloned()
            .unwrap_or_default()
    };
    let provider_default = p.default.clone().unwrap_or_default();
    let offers = match p.kind.as_str() {
        "integer" => format!(
            "a whole number{}{}",
            match (p.min, p.max) {
                (Some(lo), Some(hi)) => format!(" from {lo} to {hi}"),
                (Some(lo), None) => format!(" from {lo}"),
                (None, Some(hi)) => format!(" up to {hi}"),
                (None, None) => String::new(),
            },
            p.default
                .as_ref()
                .map(|d| format!(", {d} by default"))
                .unwrap_or_default()
        ),
        "enum" => format!("one of {}", p.options.join(", ")),
        "boolean" => format!("yes or no, {} by default", provider_default),
        "string" => match &p.default {
            Some(d) => format!("a text, {d} by default"),
            None => "a text".into(),
        },
        _ => "a multi-line text".into(),
    };
    let inputs = fields
        .iter()
        .filter(|f| **f != "all")
        .map(|field| {
            let id = format!("r-{param}-{field}");
            let name = refine::input(&param, field);
            let error = error_at(kept, &name);
            let invalid = invalid(&error);
            let described = described_by(&id, None, &error);
            let label = match *field {
                "default" => "Default",
                "min" => "At least",
                "max" => "At most",
                "choices" => "Choices (comma-separated; empty: any text)",
                _ => "Fixed value (tenants cannot change it)",
            };
            let current = value(field);
            let control = match (p.kind.as_str(), *field) {
                ("integer", _) => {
                    let placeholder = match *field {
                        "min" => p.min.map(|m| m.to_string()),
                        "max" => p.max.map(|m| m.to_string()),
                        "default" => p.default.clone(),
                        _ => None,
                    };
                    view! {
                        <input type="number" id=id.clone() name=name value=current placeholder=placeholder
                            aria-invalid=invalid aria-describedby=described />
                    }
                    .into_any()
                }
                ("enum" | "boolean", _) => {
                    let options: Vec<String> = if p.kind == "enum" {
                        p.options.clone()
                    } else {
                        vec!["true".into(), "false".into()]
                    };
                    let empty = if *field == "fixed" {
                        "(tenants choose)".to_owned()
                    } else {
                        format!("(the provider's: {provider_default})")
                    };
                    view! {
                        <select id=id.clone() name=name aria-invalid=invalid aria-describedby=described>
                            <option value="" selected=current.is_empty()>{empty}</option>
                            {options.into_iter().map(|o| {
                                let is = o == current;
                                view! { <option value=o.clone() selected=is>{o.clone()}</option> }
                            }).collect_view()}
                        </select>
                    }
                    .into_any()
                }
                ("text", _) => view! {
                    <textarea id=id.clone() name=name rows="3" spellcheck="false"
                        aria-invalid=invalid aria-describedby=described>{current}</textarea>
                }
                .into_any(),
                _ => {
                    let placeholder = match *field {
                        "default" => p.default.clone(),
                        "choices" => Some("1.33, 1.34".to_owned()),
                        _ => None,
                    };
                    view! {
                        <input type="text" id=id.clone() name=name value=current placeholder=placeholder
                            maxlength=p.max_len.filter(|_| *field != "choices").map(|m| m.to_string())
                            aria-invalid=invalid aria-describedby=described />
                    }
                    .into_any()
                }
            };
            view! {
                <div class="field">
                    <label for=id.clone()>{label}</label>
                    {control}
                    <FieldError input=id error />
                </div>
            }
        })
        .collect_view();
    let offered = (p.kind == "enum").then(|| {
        let all = refine::input(&param, "all");
        let error = error_at(kept, &all);
        let group = format!("r-{param}-offer");
        let invalid = invalid(&error);
        let described = described_by(&group, None, &error);
        let (group_id, error_input) = (group.clone(), group.clone());
        view! {
            <fieldset class="field" id=group_id aria-invalid=invalid aria-describedby=described>
                <legend>"Offered options"</legend>
                <input type="hidden" name=all.clone() value=p.options.join("\n") />
                {p.options.iter().enumerate().map(|(i, option)| {
                    let name = refine::offer_input(&param, i);
                    let checked = values.contains_key(&name);
                    view! {
                        <label><input type="checkbox" id=format!("{group}-{i}") name=name value=option.clone() checked=checked />" "{option.clone()}</label>
                    }
                }).collect_view()}
                <FieldError input=error_input error />
            </fieldset>
        }
    });
    view! {
        <fieldset class="refine" data-refine=param.clone()>
            <legend>{format!("{} ({})", p.label, param)}</legend>
            <small class="muted">{format!("The provider offers {offers}.")}</small>
            {offered}
            <div class="grid-2">{inputs}</div>
        </fieldset>
    }
    .into_any()
}

/// The page's writes. Every one ends by reading the page again (hydrated, a write does not
/// reload the page).
#[derive(Clone, Copy)]
struct CatalogWrites {
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
