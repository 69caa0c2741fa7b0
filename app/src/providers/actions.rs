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
    let input = ProviderInput {
        name,
        kind: kind.clone(),
        description: description.unwrap_or_default(),
        settings: crate::clusters::actions::form_params(s, s_shown),
        disabled: disabled.as_deref() == Some("true"),
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
        Err(e) => crate::ssr::back(&form_page, Err(e)),
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

/// Adds a template (`original` empty) or saves the template named `original`.
#[server(prefix = "/sfn", endpoint = "save_template")]
pub async fn save_template(
    original: Option<String>,
    name: String,
    provider: String,
    description: Option<String>,
    overrides: Option<String>,
    tenants: Option<String>,
    timeout_minutes: Option<String>,
    admin_access: Option<String>,
    disabled: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::cluster::TemplateInput;
    use kqueen_core::{Error, ValidationError};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let timeout = timeout_minutes.unwrap_or_default();
    let timeout = timeout.trim();
    let input = if timeout.is_empty() {
        Ok(None)
    } else {
        timeout.parse::<u32>().map(Some).map_err(|_| {
            Error::from(ValidationError::new(
                "timeout_minutes",
                "must be a whole number",
            ))
        })
    }
    .map(|timeout_minutes| TemplateInput {
        name,
        provider,
        description: description.unwrap_or_default(),
        overrides: overrides.unwrap_or_default(),
        tenants: tenants
            .unwrap_or_default()
            .split([',', ' ', '\n'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        timeout_minutes,
        admin_access: admin_access.unwrap_or_default(),
        disabled: disabled.as_deref() == Some("true"),
    });
    let original = original.filter(|o| !o.is_empty());
    let result = match (input, &original) {
        (Err(e), _) => Err(e),
        (Ok(input), Some(name)) => k
            .catalog()
            .update_template(&actor, name, input)
            .await
            .map(|_| ()),
        (Ok(input), None) => k.catalog().create_template(&actor, input).await.map(|_| ()),
    };
    match result {
        Ok(()) => leptos_axum::redirect("/providers"),
        Err(e) => {
            let page = match &original {
                Some(name) => format!("/providers?template={}", crate::query::form_escape(name)),
                None => "/providers".to_owned(),
            };
            crate::ssr::back(&page, Err(e));
        }
    }
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
