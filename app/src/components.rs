//! Pieces shared by the pages: stat cards, error notes, form messages.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

pub use crate::query::encode_query_value;
use crate::AppError;

/// A labelled figure.
#[component]
pub fn Stat(label: &'static str, value: String) -> impl IntoView {
    view! {
        <div class="stat">
            <div class="stat-value">{value}</div>
            <div class="stat-label">{label}</div>
        </div>
    }
}

/// An error shown in place of content that could not be loaded.
#[component]
pub fn ErrorNote(error: AppError) -> impl IntoView {
    view! {
        <p class="error" role="alert">
            {error.to_string()}
        </p>
    }
}

/// The `?error=` message a write sent back (`crate::ssr::back`), shown above the form.
#[component]
pub fn FormError() -> impl IntoView {
    let query = use_query_map();
    move || {
        query
            .read()
            .get("error")
            .filter(|e| !e.is_empty())
            .map(|e| {
                view! {
                    <p class="error" role="alert" id="form-error">
                        {e}
                    </p>
                }
            })
    }
}

/// The error of one input of a refused form ([`crate::kept::KeptForm`]), under the input;
/// the input points at it with `aria-describedby` (id `<input id>-error`) and `aria-invalid`.
#[component]
pub fn FieldError(input: String, error: Option<String>) -> impl IntoView {
    error.map(|e| {
        view! {
            <p class="field-error" id=format!("{input}-error") role="alert">
                {e}
            </p>
        }
    })
}

/// A refused form's error that concerns none of its inputs, above the form.
#[component]
pub fn KeptFormError(kept: Option<crate::kept::KeptForm>) -> impl IntoView {
    kept.and_then(|k| k.form_error()).map(|e| {
        view! {
            <p class="error" role="alert" id="form-error">
                {e}
            </p>
        }
    })
}

/// `aria-invalid` of an input with maybe an error: `true` when it has one, else absent.
pub fn invalid(error: &Option<String>) -> Option<&'static str> {
    error.as_ref().map(|_| "true")
}

/// `aria-describedby` of an input with help text `help` and maybe an error.
pub fn described_by(input: &str, help: Option<&str>, error: &Option<String>) -> String {
    let mut ids: Vec<String> = help.map(str::to_owned).into_iter().collect();
    if error.is_some() {
        ids.push(format!("{input}-error"));
    }
    ids.join(" ")
}

/// The tenant filter of a list page: a choice among the tenants the caller sees, or, when
/// there are too many to choose from (`tenants` is none), a field to type one in.
#[component]
pub fn TenantFilter(tenants: Option<Vec<String>>, selected: String) -> impl IntoView {
    let field = match tenants {
        Some(tenants) => view! {
            <select id="f-tenant" name="tenant">
                <option value="">"All"</option>
                {tenant_options(tenants, &selected)}
            </select>
        }
        .into_any(),
        None => view! {
            <input id="f-tenant" name="tenant" value=selected maxlength="63"
                placeholder="tenant slug (blank: all)" autocomplete="off" />
        }
        .into_any(),
    };
    view! {
        <label for="f-tenant">"Tenant"</label>
        {field}
    }
}

/// The tenant a form acts in (`name="tenant"`, required): a choice among the tenants the caller
/// sees, or, when there are too many to choose from (`tenants` is none), a field to type its
/// slug in. The caller puts the label and the error (`<id>-error`) around it.
#[component]
pub fn TenantPick(
    id: String,
    tenants: Option<Vec<String>>,
    selected: String,
    error: Option<String>,
) -> impl IntoView {
    let described = described_by(&id, None, &error);
    match tenants {
        Some(tenants) => view! {
            <select id=id name="tenant" required aria-invalid=invalid(&error) aria-describedby=described>
                {tenant_options(tenants, &selected)}
            </select>
        }
        .into_any(),
        // The slug's rules (lowercase letters, digits, '-' inside), checked by the browser
        // before the server says whether the caller may use that tenant.
        None => view! {
            <input id=id name="tenant" required value=selected maxlength="63"
                pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" title="A tenant's slug: lowercase letters, digits and '-'"
                placeholder="tenant slug" autocomplete="off"
                aria-invalid=invalid(&error) aria-describedby=described />
        }
        .into_any(),
    }
}

/// One `<option>` per tenant slug, `selected` chosen.
fn tenant_options(tenants: Vec<String>, selected: &str) -> impl IntoView {
    tenants
        .into_iter()
        .map(|t| {
            let chosen = t == selected;
            view! { <option value=t.clone() selected=chosen>{t.clone()}</option> }
        })
        .collect_view()
}

/// A table's header row, one column per label; an empty label is a column of actions,
/// named for screen readers only.
#[component]
pub fn TableHead(cols: Vec<&'static str>) -> impl IntoView {
    view! {
        <thead>
            <tr>
                {cols.into_iter().map(|c| if c.is_empty() {
                    view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> }.into_any()
                } else {
                    view! { <th scope="col">{c}</th> }.into_any()
                }).collect_view()}
            </tr>
        </thead>
    }
}

/// A card with a heading (`<name>-heading`) over a list: the `empty` note when `is_empty`,
/// else the list (`children`).
#[component]
pub fn ListCard(
    name: &'static str,
    #[prop(into)] heading: String,
    empty: &'static str,
    is_empty: bool,
    children: Children,
) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby=format!("{name}-heading")>
            <div class="card-head"><h2 id=format!("{name}-heading")>{heading}</h2></div>
            {if is_empty {
                view! { <p class="empty">{empty}</p> }.into_any()
            } else {
                children().into_any()
            }}
        </section>
    }
}

/// The destructive action a page is asking to confirm: the `?confirm=` of its URL. A
/// destructive button is a link to the same page with `?confirm=<what>` (a GET: nothing
/// happens yet), and the page then shows a [`ConfirmStep`] in place of the button. Without
/// JavaScript that is a page load; hydrated, the router changes the URL and the step appears
/// in the page, without a reload and without `window.confirm`.
pub fn confirming() -> Memo<Option<String>> {
    let query = use_query_map();
    Memo::new(move |_| query.read().get("confirm").filter(|c| !c.is_empty()))
}

/// What the confirmation is about when a page lists several (`?confirm=…&name=<item>`).
pub fn confirming_name() -> Memo<Option<String>> {
    let query = use_query_map();
    Memo::new(move |_| query.read().get("name").filter(|c| !c.is_empty()))
}

/// A confirmation step: what is about to happen (`children`: the consequences and the form
/// that posts the real action) and a way back (`cancel`, the page without `?confirm=`).
/// Ids: `<id>`, `<id>-heading`, `<id>-cancel`.
#[component]
pub fn ConfirmStep(
    id: &'static str,
    #[prop(into)] title: String,
    cancel: String,
    children: Children,
) -> impl IntoView {
    view! {
        <section class="card confirm" id=id aria-labelledby=format!("{id}-heading")>
            <div class="card-head"><h2 id=format!("{id}-heading")>{title}</h2></div>
            {children()}
            <p><a href=cancel id=format!("{id}-cancel")>"Cancel"</a></p>
        </section>
    }
}
