//! `/clusters/new`: choose a tenant and a template, then the request form rendered from
//! the template's schema.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;

use crate::clusters::actions::RequestCluster;
use kqueen_dto::params::{ParamKind, ParamSpec};

use crate::clusters::dto::NewClusterPageDto;
use crate::components::{
    described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError, TenantPick,
};
use crate::kept::{error_at, value_or, KeptForm};

use super::list::query;

#[component]
pub fn NewCluster() -> impl IntoView {
    let (tenant, template) = (query("tenant"), query("template"));
    let request = ServerAction::<RequestCluster>::new();
    // Read again after a refused request: the form comes back as it was typed.
    let page = crate::hydrated::resource(
        move || (tenant(), template(), request.version().get()),
        |(t, tpl, _)| crate::clusters::sfn::new_cluster_page(t, tpl),
    );
    view! {
        <Title text="Request a cluster" />
        <h1>"Request a cluster"</h1>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <RequestForm page=p request /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn RequestForm(page: NewClusterPageDto, request: ServerAction<RequestCluster>) -> impl IntoView {
    let kept = KeptForm::of(&page.kept, "request-form");
    let tenant = page.tenant.clone().unwrap_or_default();
    let chosen = page
        .template
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    // The tenant choice's values, cloned into the choice form's children (a closure).
    let (pick_tenants, pick_selected, pick_error) = (
        page.tenants.clone(),
        tenant.clone(),
        page.tenant_error.clone(),
    );
    let no_templates =
        page.tenant.is_some() && page.tenant_error.is_none() && page.templates.is_empty();
    let template_options = page
        .templates
        .iter()
        .map(|t| {
            let selected = t.name == chosen;
            let label = if t.description.is_empty() {
                t.name.clone()
            } else {
                format!("{} — {}", t.name, t.description)
            };
            view! { <option value=t.name.clone() selected=selected>{label}</option> }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="choose-heading">
            <div class="card-head"><h2 id="choose-heading">"1. Tenant and template"</h2></div>
            // Clusters belong to tenants: with none, say why the list is empty and who helps.
            {page.tenants.as_ref().is_some_and(Vec::is_empty).then(|| view! { <crate::overview::NoTenantHelp /> })}
            // The router's Form: hydrated, choosing navigates in place instead of reloading.
            <Form method="get" action="/clusters/new" attr:class="filter wrap" attr:id="choose-template">
                <label for="r-tenant">"Tenant"</label>
                <TenantPick id="r-tenant".to_owned() tenants=pick_tenants.clone()
                    selected=pick_selected.clone() error=pick_error.clone() />
                <label for="r-template">"Template"</label>
                <select id="r-template" name="template">
                    <option value="">"Choose…"</option>
                    {template_options}
                </select>
                // Named: the router's Form sends the button too (an unnamed one as `&=`).
                <button type="submit" name="step" value="parameters">"Show the form"</button>
            </Form>
            <FieldError input="r-tenant".to_owned() error=page.tenant_error.clone() />
            {page.quota.clone().map(|q| view! { <p class="muted" id="quota-note">"Quota of " {tenant.clone()} ": " {q}</p> })}
            {no_templates.then(|| view! { <p class="empty">"No template is offered to this tenant. Ask an operator."</p> })}
        </section>
        {page.template.clone().map(|t| {
            let fixed = t.fixed.clone();
            let params = t.parameters.clone();
            let name_error = error_at(&kept, "name");
            view! {
                <section class="card" aria-labelledby="params-heading">
                    <div class="card-head"><h2 id="params-heading">{format!("2. Parameters of {}", t.name)}</h2></div>
                    <p class="muted">{format!("Provisioner: {} ({})", t.provider, t.kind)}</p>
                    <FormError />
                    <KeptFormError kept=kept.clone() />
                    <ActionForm action=request attr:class="stack" attr:id="request-form">
                        <input type="hidden" name="tenant" value=tenant.clone() />
                        <input type="hidden" name="template" value=t.name.clone() />
                        <div class="field">
                            <label for="p-name">"Cluster name"</label>
                            <input id="p-name" name="name" required maxlength="63" pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?"
                                value=value_or(&kept, "name", "")
                                aria-invalid=invalid(&name_error)
                                aria-describedby=described_by("p-name", Some("p-name-help"), &name_error) />
                            <FieldError input="p-name".to_owned() error=name_error.clone() />
                            <small id="p-name-help" class="muted">"Lowercase letters, digits and '-', unique in the tenant."</small>
                        </div>
                        {params.into_iter().map(|p| {
                            let input = format!("p[{}]", p.name);
                            let prefill = kept.as_ref().and_then(|k| k.value(&input));
                            let error = error_at(&kept, &input);
                            view! { <ParamField param=p prefix="p" value=prefill error=error /> }
                        }).collect_view()}
                        {(!fixed.is_empty()).then(|| view! {
                            <p class="muted">"Set by the template: "
                                {fixed.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")}
                            </p>
                        })}
                        <button type="submit" id="request-submit">"Request cluster"</button>
                    </ActionForm>
                </section>
            }
        })}
    }
}

/// One input rendered from a schema parameter. Field names are `<prefix>[<param name>]`; a
/// checkbox also sends `<prefix>_shown[<param name>]`, so that an unchecked one counts as
/// `false` ([`crate::schema_form::form_params`]).
#[component]
pub fn ParamField(
    param: ParamSpec,
    prefix: &'static str,
    value: Option<String>,
    /// The error a refused form names this input with.
    #[prop(default = None)]
    error: Option<String>,
) -> impl IntoView {
    let id = format!("f-{}", param.name);
    let name = format!("{prefix}[{}]", param.name);
    let shown = format!("{prefix}_shown[{}]", param.name);
    let help_id = format!("{id}-help");
    let described = crate::components::described_by(&id, Some(&help_id), &error);
    let invalid = invalid(&error);
    let value = value.or(param.default_text()).unwrap_or_default();
    let mut help = param.help.clone().unwrap_or_default();
    if let (Some(lo), Some(hi)) = param.kind.range() {
        help = format!("{help} ({lo}–{hi})").trim().to_owned();
    }
    if param.secret {
        help = format!("{help} Stored encrypted; never shown again.")
            .trim()
            .to_owned();
    }
    let input = match &param.kind {
        ParamKind::Integer { min, max, .. } => view! {
            <input type="number" id=id.clone() name=name.clone() value=value required=param.required
                min=min.map(|m| m.to_string()) max=max.map(|m| m.to_string())
                aria-describedby=described.clone() aria-invalid=invalid />
        }.into_any(),
        ParamKind::Boolean { .. } => {
            let checked = value == "true";
            view! {
                <input type="hidden" name=shown value="1" />
                <input type="checkbox" id=id.clone() name=name.clone() value="true" checked=checked aria-describedby=described.clone() aria-invalid=invalid />
            }.into_any()
        }
        ParamKind::Enum { options, .. } => view! {
            <select id=id.clone() name=name.clone() aria-describedby=described.clone() aria-invalid=invalid>
                {options.iter().map(|o| {
                    let selected = *o == value;
                    view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                }).collect_view()}
            </select>
        }.into_any(),
        ParamKind::Text { .. } => view! {
            <textarea id=id.clone() name=name.clone() rows="8" required=param.required
                aria-describedby=described.clone() aria-invalid=invalid spellcheck="false">{value}</textarea>
        }.into_any(),
        ParamKind::String { max_len, .. } => view! {
            <input type=if param.secret { "password" } else { "text" } id=id.clone() name=name.clone()
                value=value required=param.required maxlength=max_len.to_string()
                autocomplete="off" aria-describedby=described.clone() aria-invalid=invalid />
        }.into_any(),
    };
    view! {
        <div class="field" data-param=param.name.clone()>
            <label for=id.clone()>{param.label.clone()}{param.required.then_some(" *")}</label>
            {input}
            <crate::components::FieldError input=id error />
            <small id=help_id class="muted">{help}</small>
        </div>
    }
}
