//! The providers' rows and form: settings rendered from the kind's provider schema.

use kqueen_dto::kinds::ProviderKind;
use kqueen_dto::params::{ParamKind, ParamSpec};
use kqueen_dto::providers::{Kind, Provider};
use leptos::prelude::*;

use crate::clusters::request::ParamField;
use crate::components::{described_by, encode_query_value, invalid, FieldError, KeptFormError};
use crate::kept::{checked_or, error_at, value_or, KeptForm};
use crate::providers::actions::SaveProvider;

/// The kind and what its clusters come from, for the kind picker.
pub(super) fn kind_label(kind: ProviderKind) -> String {
    format!("{kind} — {}", kind.summary())
}

#[component]
pub(super) fn ProviderRow(
    p: Provider,
    /// The kind's settings, for their labels and types.
    params: Vec<ParamSpec>,
) -> impl IntoView {
    // Each setting by its label; empty ones are left out, yes/no settings read as such.
    let settings: Vec<(String, String)> = p
        .settings
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| {
            let spec = params.iter().find(|s| s.name == *k);
            let label = spec.map_or_else(|| k.clone(), |s| s.label.clone());
            let boolean = spec.is_some_and(|s| matches!(s.kind, ParamKind::Boolean { .. }));
            let value = match (boolean, v.as_str()) {
                (true, "true") => "yes".to_owned(),
                (true, "false") => "no".to_owned(),
                _ => v.clone(),
            };
            (label, value)
        })
        .collect();
    let name = p.name.clone();
    let edit = format!("/providers?edit={}", p.name);
    let adopts = p.kind == ProviderKind::ClusterApi;
    view! {
        <tr data-provider=p.name.clone()>
            <td>{p.name.clone()}{(!p.description.is_empty()).then(|| view! { <br /><small class="muted">{p.description.clone()}</small> })}</td>
            <td>{p.kind.as_str()}</td>
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
pub(super) fn ProviderForm(
    kind: Kind,
    existing: Option<Provider>,
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
        move |param: &ParamSpec| -> Option<String> {
            if let Some(k) = &kept {
                return k.value(&format!("s[{}]", param.name));
            }
            existing
                .as_ref()
                .and_then(|p| p.settings.get(&param.name).cloned())
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
            <input type="hidden" name="kind" value=kind.kind.as_str() />
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
            {kind.provider_schema.iter().cloned().map(|mut p| {
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
