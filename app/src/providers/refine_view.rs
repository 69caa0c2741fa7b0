//! A template's refinement inputs for one cluster parameter, by its type (what they mean
//! and how they are posted: `refine.rs`).

use std::collections::BTreeMap;

use kqueen_dto::params::{ParamKind, ParamSpec};
use leptos::prelude::*;

use crate::components::{described_by, invalid, FieldError};
use crate::kept::{error_at, KeptForm};
use crate::providers::refine;

/// The refinement inputs of one cluster parameter (ids `r-<parameter>-<field>`), with
/// `values` by input name and the errors of `kept`.
pub(super) fn refine_param(
    p: &ParamSpec,
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
    let inputs = fields
        .iter()
        .filter(|f| **f != "all")
        .map(|field| {
            let value = values
                .get(&refine::input(&param, field))
                .cloned()
                .unwrap_or_default();
            refine_input(p, field, value, kept)
        })
        .collect_view();
    let offered = match &p.kind {
        ParamKind::Enum { options, .. } => Some(offered_options(&param, options, values, kept)),
        _ => None,
    };
    view! {
        <fieldset class="refine" data-refine=param.clone()>
            <legend>{format!("{} ({})", p.label, param)}</legend>
            <small class="muted">{format!("The provider offers {}.", offers(p))}</small>
            {offered}
            <div class="grid-2">{inputs}</div>
        </fieldset>
    }
    .into_any()
}

/// What the provider offers for `p`, in words ("a whole number from 1 to 5, 3 by default").
fn offers(p: &ParamSpec) -> String {
    let default = p.default_text();
    match &p.kind {
        ParamKind::Integer { min, max, .. } => format!(
            "a whole number{}{}",
            match (min, max) {
                (Some(lo), Some(hi)) => format!(" from {lo} to {hi}"),
                (Some(lo), None) => format!(" from {lo}"),
                (None, Some(hi)) => format!(" up to {hi}"),
                (None, None) => String::new(),
            },
            default
                .map(|d| format!(", {d} by default"))
                .unwrap_or_default()
        ),
        ParamKind::Enum { options, .. } => format!("one of {}", options.join(", ")),
        ParamKind::Boolean { .. } => {
            format!("yes or no, {} by default", default.unwrap_or_default())
        }
        ParamKind::String { .. } => match default {
            Some(d) => format!("a text, {d} by default"),
            None => "a text".into(),
        },
        ParamKind::Text { .. } => "a multi-line text".into(),
    }
}

/// One refinement input (`field`: `default`, `min`, `max`, `choices` or `fixed`) of `p`,
/// showing `current`, with its label and the error `kept` names it with.
fn refine_input(
    p: &ParamSpec,
    field: &str,
    current: String,
    kept: &Option<KeptForm>,
) -> impl IntoView {
    let id = format!("r-{}-{field}", p.name);
    let name = refine::input(&p.name, field);
    let error = error_at(kept, &name);
    let invalid = invalid(&error);
    let described = described_by(&id, None, &error);
    let label = match field {
        "default" => "Default",
        "min" => "At least",
        "max" => "At most",
        "choices" => "Choices (comma-separated; empty: any text)",
        _ => "Fixed value (tenants cannot change it)",
    };
    let control = match &p.kind {
        ParamKind::Integer { min, max, .. } => {
            let placeholder = match field {
                "min" => min.map(|m| m.to_string()),
                "max" => max.map(|m| m.to_string()),
                "default" => p.default_text(),
                _ => None,
            };
            view! {
                <input type="number" id=id.clone() name=name value=current placeholder=placeholder
                    aria-invalid=invalid aria-describedby=described />
            }
            .into_any()
        }
        ParamKind::Enum { .. } | ParamKind::Boolean { .. } => {
            let options: Vec<String> = match &p.kind {
                ParamKind::Enum { options, .. } => options.clone(),
                _ => vec!["true".into(), "false".into()],
            };
            let empty = if field == "fixed" {
                "(tenants choose)".to_owned()
            } else {
                format!("(the provider's: {})", p.default_text().unwrap_or_default())
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
        ParamKind::Text { .. } => view! {
            <textarea id=id.clone() name=name rows="3" spellcheck="false"
                aria-invalid=invalid aria-describedby=described>{current}</textarea>
        }
        .into_any(),
        ParamKind::String { max_len, .. } => {
            let placeholder = match field {
                "default" => p.default_text(),
                "choices" => Some("1.33, 1.34".to_owned()),
                _ => None,
            };
            let max_len = (field != "choices").then(|| max_len.to_string());
            view! {
                <input type="text" id=id.clone() name=name value=current placeholder=placeholder
                    maxlength=max_len aria-invalid=invalid aria-describedby=described />
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
}

/// A choice's offered options: one box per option (ticked: offered) and the list the form
/// showed, so that a post tells an unticked box from a missing one.
fn offered_options(
    param: &str,
    options: &[String],
    values: &BTreeMap<String, String>,
    kept: &Option<KeptForm>,
) -> impl IntoView {
    let all = refine::input(param, "all");
    let error = error_at(kept, &all);
    let group = format!("r-{param}-offer");
    let invalid = invalid(&error);
    let described = described_by(&group, None, &error);
    let (group_id, error_input) = (group.clone(), group.clone());
    view! {
        <fieldset class="field" id=group_id aria-invalid=invalid aria-describedby=described>
            <legend>"Offered options"</legend>
            <input type="hidden" name=all.clone() value=options.join("\n") />
            {options.iter().enumerate().map(|(i, option)| {
                let name = refine::offer_input(param, i);
                let checked = values.contains_key(&name);
                view! {
                    <label><input type="checkbox" id=format!("{group}-{i}") name=name value=option.clone() checked=checked />" "{option.clone()}</label>
                }
            }).collect_view()}
            <FieldError input=error_input error />
        </fieldset>
    }
}
