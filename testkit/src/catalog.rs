//! A provider and a template to request clusters from, as an operator would define them.

use kqueen_core::cluster::{ProviderInput, TemplateInput};
use kqueen_core::{Actor, Kqueen};

/// Defines provider `provider` of `kind` with `settings`, and template `template` on it with
/// the parameter refinements `overrides` (JSON, empty: none), offered to every tenant.
pub async fn offer(
    k: &Kqueen,
    operator: &Actor,
    (kind, provider, settings): (&str, &str, &[(&str, &str)]),
    (template, overrides): (&str, &str),
) {
    let settings = settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let provider_input = ProviderInput {
        name: provider.into(),
        kind: kind.into(),
        settings,
        ..Default::default()
    };
    k.catalog()
        .create_provider(operator, provider_input)
        .await
        .expect("create the provider");
    let template_input = TemplateInput {
        name: template.into(),
        provider: provider.into(),
        overrides: overrides.into(),
        ..Default::default()
    };
    k.catalog()
        .create_template(operator, template_input)
        .await
        .expect("create the template");
}
