//! The templates' rows and form: a provider, and how far tenants may set its cluster
//! parameters (the refinements, as inputs per parameter or as JSON).

use std::collections::BTreeMap;

use kqueen_dto::kinds::ProviderKind;
use kqueen_dto::params::ParamKind;
use kqueen_dto::providers::{Kind, Template};
use leptos::prelude::*;

use crate::components::{described_by, encode_query_value, invalid, FieldError, KeptFormError};
use crate::kept::{checked_or, error_at, value_or, KeptForm};
use crate::providers::actions::SaveTemplate;
use crate::providers::refine;
use crate::providers::refine_view::refine_param;

#[component]
pub(super) fn TemplateRow(t: Template) -> impl IntoView {
    let name = t.name.clone();
    let edit = format!("/providers?template={}", t.name);
    let form = t
        .parameters
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Integer { min, max, .. } => format!(
                "{} ({}–{})",
                p.name,
                min.map_or("…".into(), |v| v.to_string()),
                max.map_or("…".into(), |v| v.to_string())
            ),
            ParamKind::Enum { options, .. } => format!("{} [{}]", p.name, options.join("|")),
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
pub(super) fn template_step(q: &leptos_router::params::ParamsMap) -> Option<KeptForm> {
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
pub(super) fn TemplateForm(
    providers: Vec<(String, ProviderKind)>,
    kinds: Vec<Kind>,
    existing: Option<Template>,
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
    let text = |name: &str, of: &dyn Fn(&Template) -> String| {
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
    let json = text("overrides", &overrides_text);
    let json_was = text("overrides_was", &overrides_text);
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
                .map(|(_, k)| *k);
            let schema = kinds
                .iter()
                .find(|k| Some(k.kind) == kind)
                .map(|k| k.cluster_schema.clone())
                .unwrap_or_default();
            let kind = kind.map(ProviderKind::as_str).unwrap_or_default();
            let (values, errors) = match &kept_refinements {
                Some(k) if provider == initial => (k.values.clone(), Some(k.clone())),
                _ => {
                    let mine = existing
                        .as_ref()
                        .filter(|t| t.provider == provider)
                        .map(|t| t.overrides.clone())
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

/// A template's refinements as the JSON input shows them (empty: none).
fn overrides_text(t: &Template) -> String {
    if t.overrides.is_empty() {
        String::new()
    } else {
        serde_json::to_string_pretty(&t.overrides).unwrap_or_default()
    }
}
