//! The providers page's writes (providers and templates), as server functions behind
//! `ActionForm`: they post and redirect without JavaScript, and run in place with it.

// A server function takes one argument per form field, and the template form has nine
// (the lint fires on the code `#[server]` generates, where an item attribute does not reach).
#![allow(clippy::too_many_arguments)]

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::AppError;

/// Adds a provider (`original` empty) or saves the provider named `original`. Secret
/// settings left empty keep their stored value.
#[server(prefix = "/sfn", endpoint = "save_provider")]
pub async fn save_provider(
    original: Option<String>,
    kind: String,
    name: String,
    description: Option<String>,
    s: Option<BTreeMap<String, String>>,
    s_shown: Option<BTreeMap<String, String>>,
    disabled: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::cluster::ProviderInput;

    use crate::query::form_escape;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let settings = crate::schema_form::form_params(s, s_shown);
    let disabled = disabled.as_deref() == Some("true");
    let description = description.unwrap_or_default();
    let values = [
        ("name".to_owned(), name.clone()),
        ("description".to_owned(), description.clone()),
        ("disabled".to_owned(), disabled.to_string()),
    ]
    .into_iter()
    .chain(settings.iter().map(|(k, v)| (format!("s[{k}]"), v.clone())))
    .collect();
    let input = ProviderInput {
        name,
        kind: kind.clone(),
        description,
        settings,
        disabled,
    };
    let original = original.filter(|o| !o.is_empty());
    let (result, form_page) = match &original {
        Some(name) => (
            k.catalog().update_provider(&actor, name, input).await,
            format!("/providers?edit={}", form_escape(name)),
        ),
        None => (
            k.catalog().create_provider(&actor, input).await,
            format!("/providers?kind={}", form_escape(&kind)),
        ),
    };
    match result {
        Ok(_) => leptos_axum::redirect("/providers"),
        Err(e) => crate::kept::refused(&form_page, "provider-form", values, e).await,
    }
    Ok(())
}

/// Deletes a provider (refused while templates use it).
#[server(prefix = "/sfn", endpoint = "delete_provider")]
pub async fn delete_provider(name: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.catalog().delete_provider(&actor, &name).await;
    crate::ssr::back("/providers", result);
    Ok(())
}

/// Adds a template (`original` empty) or saves the template named `original`, or comes
/// back to the form with every value as typed and the error at its input ([`crate::kept`]).
///
/// The refinements come from the form's inputs (`o`, rendered for the provider `o_for`;
/// [`crate::providers::refine`]), or from the JSON of the advanced view (`overrides`) when
/// it is not empty and differs from what the form showed (`overrides_was`). When both were
/// changed and they disagree, nothing is saved: the operator says which one holds.
#[server(prefix = "/sfn", endpoint = "save_template")]
pub async fn save_template(
    original: Option<String>,
    name: String,
    template_provider: String,
    description: Option<String>,
    o: Option<BTreeMap<String, crate::providers::refine::RefinementFields>>,
    o_for: Option<String>,
    overrides: Option<String>,
    overrides_was: Option<String>,
    tenants: Option<String>,
    timeout_minutes: Option<String>,
    admin_access: Option<String>,
    disabled: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::cluster::TemplateInput;
    use kqueen_core::provisioner::schema::parse_overrides;
    use kqueen_core::{Error, ValidationError};

    use crate::providers::refine;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let o = o.unwrap_or_default();
    let (description, overrides, overrides_was, tenants, timeout, admin_access) = (
        description.unwrap_or_default(),
        overrides.unwrap_or_default(),
        overrides_was.unwrap_or_default(),
        tenants.unwrap_or_default(),
        timeout_minutes.unwrap_or_default(),
        admin_access.unwrap_or_default(),
    );
    let disabled = disabled.as_deref() == Some("true");
    let mut values = refine::posted_values(&o);
    for (input, value) in [
        ("name", &name),
        ("template_provider", &template_provider),
        ("description", &description),
        ("o_for", o_for.as_ref().unwrap_or(&template_provider)),
        ("overrides", &overrides),
        ("overrides_was", &overrides_was),
        ("tenants", &tenants),
        ("timeout_minutes", &timeout),
        ("admin_access", &admin_access),
        ("disabled", &disabled.to_string()),
    ] {
        values.insert(input.to_owned(), value.clone());
    }
    let from_form = refine::refinements_from_fields(&o).map_err(|p| {
        // Named so that the kept form finds the input `o[<param>][<field>]`.
        Error::from(ValidationError::at(
            "overrides",
            format!("{}][{}", p.param, p.field),
            p.message,
        ))
    });
    let json = overrides.trim();
    let json_wins = !json.is_empty() && json != overrides_was.trim();
    let chosen = from_form.and_then(|form| {
        if !json_wins {
            return serde_json::to_string(&form)
                .map(|text| (text, false))
                .map_err(|_| Error::Corrupt("refinements".into()));
        }
        let shown = parse_overrides(&overrides_was).ok();
        let typed = parse_overrides(json).ok();
        if let (Some(shown), Some(typed)) = (shown, typed) {
            if form != shown && form != typed {
                return Err(ValidationError::new(
                    "overrides",
                    "you changed both the refinements form and this JSON, and they differ: \
                     undo the changes of one of them (both are kept as you left them)",
                )
                .into());
            }
        }
        Ok((json.to_owned(), true))
    });
    let timeout = timeout.trim();
    let input = chosen.and_then(|(text, from_json)| {
        let timeout_minutes = if timeout.is_empty() {
            None
        } else {
            Some(timeout.parse::<u32>().map_err(|_| {
                Error::from(ValidationError::new(
                    "timeout_minutes",
                    "must be a whole number",
                ))
            })?)
        };
        let input = TemplateInput {
            name: name.clone(),
            provider: template_provider.clone(),
            description: description.clone(),
            overrides: text,
            tenants: tenants
                .split([',', ' ', '\n'])
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            timeout_minutes,
            admin_access: admin_access.clone(),
            disabled,
        };
        Ok((input, from_json))
    });
    let original = original.filter(|o| !o.is_empty());
    let (result, from_json) = match (input, &original) {
        (Err(e), _) => (Err(e), false),
        (Ok((input, from_json)), Some(name)) => (
            k.catalog()
                .update_template(&actor, name, input)
                .await
                .map(|_| ()),
            from_json,
        ),
        (Ok((input, from_json)), None) => (
            k.catalog().create_template(&actor, input).await.map(|_| ()),
            from_json,
        ),
    };
    let Err(e) = result else {
        leptos_axum::redirect("/providers");
        return Ok(());
    };
    // Errors at the input they concern: a parameter's refinement at the form's input for
    // it, or at the JSON when that was used; the provider at its list.
    let e = match e {
        Error::Invalid(v)
            if v.field == "overrides" && v.key.as_deref().is_some_and(|k| !k.contains(']')) =>
        {
            let param = v.key.clone().unwrap_or_default();
            let field = if from_json {
                None
            } else {
                let o = refine::refinements_from_fields(&o).unwrap_or_default();
                let schema = async {
                    let provider = k
                        .catalog()
                        .provider(&actor, &template_provider)
                        .await
                        .ok()?;
                    let kinds = k.catalog().provider_kinds(&actor).await.ok()?;
                    kinds
                        .into_iter()
                        .find(|i| i.kind == provider.kind)
                        .map(|i| i.cluster_schema)
                }
                .await;
                schema
                    .zip(o.get(&param))
                    .and_then(|(schema, o)| refine::culprit(&schema, &param, o))
                    .map(|field| match field {
                        "options" if values.contains_key(&refine::input(&param, "all")) => "all",
                        "options" => "choices",
                        other => other,
                    })
                    .filter(|field| values.contains_key(&refine::input(&param, field)))
            };
            match field {
                Some(field) => {
                    ValidationError::at("overrides", format!("{param}][{field}"), v.message)
                }
                None => ValidationError::new("overrides", format!("in {param}, {}", v.message)),
            }
            .into()
        }
        Error::Invalid(v) if v.field == "provider" => {
            ValidationError::new("template_provider", v.message).into()
        }
        other => other,
    };
    let page = match &original {
        Some(name) => format!("/providers?template={}", crate::query::form_escape(name)),
        None => "/providers".to_owned(),
    };
    crate::kept::refused(&page, "template-form", values, e).await;
    Ok(())
}

/// Deletes a template.
#[server(prefix = "/sfn", endpoint = "delete_template")]
pub async fn delete_template(name: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.catalog().delete_template(&actor, &name).await;
    crate::ssr::back("/providers", result);
    Ok(())
}
