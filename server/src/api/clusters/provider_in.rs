//! What creates or edits a provider: its settings, typed by its kind's schema (`Debug`
//! never shows a value: some are secrets).

use kqueen_core::cluster::ProviderInput;
use kqueen_core::provisioner::schema::params_from_json;
use kqueen_core::provisioner::{ParamKind, ParamSchema, Params};
use kqueen_core::{Error, ValidationError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::dto::RedactedJson;
use crate::api::schemas::ParamValue;

/// Creates a provider (`POST`), or edits one (`PUT`: `kind` is ignored, secret settings left
/// out keep their stored value).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ProviderIn {
    /// DNS-1123 label.
    #[schema(format = "dns-label", max_length = 63, example = "lab")]
    pub name: String,
    #[serde(default)]
    #[schema(value_type = kqueen_dto::kinds::ProviderKind, required = true)]
    pub kind: String,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// Setting name -> value (strings, numbers or booleans), as the kind's `provider_schema`
    /// at `/api/v1/provider-kinds` describes them; checked against it (400 naming the setting).
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, ParamValue>)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub disabled: bool,
}

impl std::fmt::Debug for ProviderIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind: &dyn std::fmt::Debug = &self.kind;
        let fields = (&self.name, kind, &self.description, &self.settings);
        debug_provider(f, "ProviderIn", fields, self.disabled)
    }
}

/// A provider's input in `Debug`: the settings named, none of their values shown (some are
/// secrets).
fn debug_provider(
    f: &mut std::fmt::Formatter<'_>,
    what: &str,
    (name, kind, description, settings): (
        &String,
        &dyn std::fmt::Debug,
        &String,
        &serde_json::Map<String, serde_json::Value>,
    ),
    disabled: bool,
) -> std::fmt::Result {
    f.debug_struct(what)
        .field("name", name)
        .field("kind", kind)
        .field("description", description)
        .field("settings", &RedactedJson(settings))
        .field("disabled", &disabled)
        .finish()
}

/// Edits a provider: its kind stays; secret settings left out keep their stored value. (The
/// document describes this body per kind, `provider_schemas`.)
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ProviderUpdateIn {
    /// DNS-1123 label (a new name renames it).
    #[schema(format = "dns-label", max_length = 63, example = "lab")]
    pub name: String,
    /// The provider's kind, which cannot change (another one answers 409): required, so that
    /// the settings are read as that kind's.
    #[serde(default)]
    #[schema(value_type = Option<kqueen_dto::kinds::ProviderKind>)]
    pub kind: Option<String>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// Setting name -> value, as the kind's `provider_schema` at `/api/v1/provider-kinds`
    /// describes them; checked against it (400 naming the setting).
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, ParamValue>)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub disabled: bool,
}

impl std::fmt::Debug for ProviderUpdateIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind: &dyn std::fmt::Debug = &self.kind;
        let fields = (&self.name, kind, &self.description, &self.settings);
        debug_provider(f, "ProviderUpdateIn", fields, self.disabled)
    }
}

impl ProviderUpdateIn {
    /// The input to the core, the settings taken as `schema` (the stored kind's) types them.
    pub(crate) fn into_input(self, schema: &ParamSchema) -> Result<ProviderInput, Error> {
        ProviderIn {
            name: self.name,
            kind: String::new(),
            description: self.description,
            settings: self.settings,
            disabled: self.disabled,
        }
        .into_input(Some(schema))
    }
}

impl ProviderIn {
    /// The input to the core. With the kind's `schema`, each setting must have the JSON type
    /// the document gives it (a boolean, a whole number or text; null leaves it out).
    pub(crate) fn into_input(self, schema: Option<&ParamSchema>) -> Result<ProviderInput, Error> {
        let settings = match schema {
            Some(schema) => typed_settings(schema, &self.settings)?,
            None => params_from_json(&self.settings)?,
        };
        Ok(ProviderInput {
            name: self.name,
            kind: self.kind,
            description: self.description,
            settings,
            disabled: self.disabled,
        })
    }
}

/// Settings as text for the core, each checked to be of the JSON type its kind's schema
/// gives it. Names the schema lacks pass as text: the core refuses them by name.
fn typed_settings(
    schema: &ParamSchema,
    settings: &serde_json::Map<String, serde_json::Value>,
) -> Result<Params, ValidationError> {
    use serde_json::Value;
    let mut out = Params::new();
    for (name, value) in settings {
        let Some(spec) = schema.get(name) else {
            let one = serde_json::Map::from_iter([(name.clone(), value.clone())]);
            out.extend(params_from_json(&one)?);
            continue;
        };
        let wrong = |what: &str| ValidationError::new("settings", format!("{name}: {what}"));
        let text = match (&spec.kind, value) {
            (_, Value::Null) => continue,
            (ParamKind::Boolean { .. }, Value::Bool(b)) => b.to_string(),
            (ParamKind::Boolean { .. }, _) => return Err(wrong("must be true or false")),
            (ParamKind::Integer { .. }, Value::Number(n)) if n.is_i64() => n.to_string(),
            (ParamKind::Integer { .. }, _) => return Err(wrong("must be a whole number")),
            (_, Value::String(s)) => s.clone(),
            _ => return Err(wrong("must be text")),
        };
        out.insert(name.clone(), text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::ProviderIn;

    #[test]
    fn debug_never_shows_settings() {
        let provider: ProviderIn = serde_json::from_value(serde_json::json!({
            "name": "ci", "kind": "jenkins", "settings": {"api_token": "11aa22bb-jenkins-token"}
        }))
        .unwrap();
        let shown = format!("{provider:?}");
        assert!(
            !shown.contains("11aa22bb") && shown.contains("api_token"),
            "{shown}"
        );
    }
}
