//! `/providers` (operators): providers (a provisioner backend and its settings, secrets in
//! the vault) and templates (what tenants may request from a provider). Forms are rendered
//! from the provisioner's schemas.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::clusters::dto::ParamDto;
use crate::clusters::request::ParamField;
use crate::components::{
    confirming, confirming_name, encode_query_value, ConfirmStep, ErrorNote, FormError, ListCard,
    TableHead,
};
use crate::providers::actions::{DeleteProvider, DeleteTemplate, SaveProvider, SaveTemplate};
use crate::providers::dto::{KindDto, ProviderDto, ProvidersPageDto, TemplateDto};

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
    let edit_template = q.read_untracked().get("template").filter(|k| !k.is_empty());
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
                    {page.providers.iter().cloned().map(|p| view! { <ProviderRow p /> }).collect_view()}
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
            {kind_dto.map(|k| view! { <ProviderForm kind=k existing=editing.clone() save=writes.save_provider /> })}
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
                view! { <TemplateForm providers=provider_names kinds=page.kinds.clone() existing=editing_template save=writes.save_template /> }.into_any()
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
    match kind {
        "import" => "import — an existing cluster's kubeconfig".into(),
        "command" => "command — an installer command (kubeadm, kind, k3d, terraform…)".into(),
        "jenkins" => "jenkins — a parameterized Jenkins job".into(),
        "hosted" => "hosted — control planes KQueen runs on a shared etcd".into(),
        other => other.into(),
    }
}

#[component]
fn ProviderRow(p: ProviderDto) -> impl IntoView {
    let name = p.name.clone();
    let edit = format!("/providers?edit={}", p.name);
    view! {
        <tr data-provider=p.name.clone()>
            <td>{p.name.clone()}{(!p.description.is_empty()).then(|| view! { <br /><small class="muted">{p.description.clone()}</small> })}</td>
            <td>{p.kind}</td>
            <td><small>{p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")}</small></td>
            <td><small>{if p.secret_fields.is_empty() { "–".to_owned() } else { format!("{} (set)", p.secret_fields.join(", ")) }}</small></td>
            <td>{if p.disabled { "disabled" } else { "enabled" }}</td>
            <td class="actions">
                <a href=edit>"Edit"</a>
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
) -> impl IntoView {
    let original = existing
        .as_ref()
        .map(|p| p.name.clone())
        .unwrap_or_default();
    let value_of = {
        let existing = existing.clone();
        move |param: &ParamDto| -> Option<String> {
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
    view! {
        <ActionForm action=save attr:class="stack" attr:id="provider-form">
            <input type="hidden" name="original" value=original />
            <input type="hidden" name="kind" value=kind.kind.clone() />
            <p class="muted">{format!("Kind {}: create, delete{}{}", kind.kind, if can.is_empty() { "" } else { ", " }, can)}</p>
            <div class="field">
                <label for="provider-name">"Name"</label>
                <input id="provider-name" name="name" required maxlength="63" value=existing.as_ref().map(|p| p.name.clone()).unwrap_or_default() />
            </div>
            <div class="field">
                <label for="provider-description">"Description"</label>
                <input id="provider-description" name="description" maxlength="500" value=existing.as_ref().map(|p| p.description.clone()).unwrap_or_default() />
            </div>
            {kind.provider_params.iter().cloned().map(|mut p| {
                let value = value_of(&p);
                if p.secret && is_edit {
                    p.required = false;
                    p.help = Some(format!("{} Leave empty to keep the stored value.", p.help.unwrap_or_default()));
                }
                view! { <ParamField param=p prefix="s" value=value /> }
            }).collect_view()}
            <div class="field">
                <label><input type="checkbox" name="disabled" value="true" checked=existing.as_ref().is_some_and(|p| p.disabled) />" Disabled (no new clusters)"</label>
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

#[component]
fn TemplateForm(
    providers: Vec<(String, String)>,
    kinds: Vec<KindDto>,
    existing: Option<TemplateDto>,
    save: ServerAction<SaveTemplate>,
) -> impl IntoView {
    let original = existing
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let chosen = existing.as_ref().map(|t| t.provider.clone());
    let wide = existing
        .as_ref()
        .is_some_and(|t| t.admin_access == "cluster-admin");
    let help = kinds
        .iter()
        .map(|k| {
            let params = k
                .cluster_params
                .iter()
                .map(|p| format!("{} ({})", p.name, p.kind))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{}: {params}", k.kind)
        })
        .collect::<Vec<_>>()
        .join("; ");
    view! {
        <ActionForm action=save attr:class="stack" attr:id="template-form">
            <input type="hidden" name="original" value=original />
            <div class="field">
                <label for="template-name">"Name"</label>
                <input id="template-name" name="name" required maxlength="63" value=existing.as_ref().map(|t| t.name.clone()).unwrap_or_default() />
            </div>
            <div class="field">
                <label for="template-provider">"Provider"</label>
                <select id="template-provider" name="provider">
                    {providers.into_iter().map(|(name, kind)| {
                        let selected = chosen.as_deref() == Some(name.as_str());
                        view! { <option value=name.clone() selected=selected>{format!("{name} ({kind})")}</option> }
                    }).collect_view()}
                </select>
            </div>
            <div class="field">
                <label for="template-description">"Description"</label>
                <input id="template-description" name="description" maxlength="500" value=existing.as_ref().map(|t| t.description.clone()).unwrap_or_default() />
            </div>
            <div class="field">
                <label for="template-overrides">"Parameter refinements (JSON)"</label>
                <textarea id="template-overrides" name="overrides" rows="6" spellcheck="false" aria-describedby="overrides-help"
                    placeholder=r#"{"node_count": {"max": 5, "default": "3"}, "kubernetes_version": {"options": ["1.33", "1.34"]}}"#>
                    {existing.as_ref().map(|t| t.overrides.clone()).unwrap_or_default()}
                </textarea>
                <small id="overrides-help" class="muted">
                    "Per parameter: default, min, max (integers; may only narrow), options (a subset, or a choice list for text), fixed (a value tenants cannot change). Parameters by kind — "
                    {help}
                </small>
            </div>
            <div class="field">
                <label for="template-tenants">"Offered to tenants"</label>
                <input id="template-tenants" name="tenants" placeholder="team-a, team-b (empty: every tenant)" value=existing.as_ref().map(|t| t.tenants.join(", ")).unwrap_or_default() />
            </div>
            <div class="field">
                <label for="template-timeout">"Timeout (minutes)"</label>
                <input type="number" id="template-timeout" name="timeout_minutes" min="1" max="10080" value=existing.as_ref().map_or_else(|| "60".to_owned(), |t| t.timeout_minutes.to_string()) />
            </div>
            <div class="field">
                <label for="template-admin-access">"Tenant admins' kubeconfigs"</label>
                <select id="template-admin-access" name="admin_access" aria-describedby="admin-access-help">
                    <option value="namespaced" selected=!wide>"admin in the tenant's namespaces (default)"</option>
                    <option value="cluster-admin" selected=wide>"cluster-admin on the whole cluster"</option>
                </select>
                <small id="admin-access-help" class="muted">
                    "Members always get edit in the tenant's namespaces only (never kube-system, kqueen-users or namespaces KQueen owns). Give tenant admins cluster-admin only for clusters the tenant owns outright, e.g. hosted control planes; existing clusters follow within a minute."
                </small>
            </div>
            <div class="field">
                <label><input type="checkbox" name="disabled" value="true" checked=existing.as_ref().is_some_and(|t| t.disabled) />" Disabled (not offered)"</label>
            </div>
            <button type="submit" id="template-submit">{if existing.is_some() { "Save template" } else { "Add template" }}</button>
        </ActionForm>
    }
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
