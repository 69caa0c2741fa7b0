//! Parameter schemas as forms and clients read them: what a provider's settings and a
//! cluster request consist of, and a template's refinements of them. The domain checks
//! values against them (`kqueen_core::cluster::params`); the REST API sends them at
//! `/api/v1/provider-kinds` and `/api/v1/templates`, the portal renders its forms from them.

use serde::{Deserialize, Serialize};

/// The type of one parameter, with its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ParamKind {
    /// One line of text, at most `max_len` characters.
    String {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
        #[serde(default = "default_max_len")]
        max_len: u32,
    },
    /// Several lines of text (a kubeconfig, a script argument list).
    Text {
        #[serde(default = "default_text_len")]
        max_len: u32,
    },
    Integer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
    },
    Boolean {
        #[serde(default)]
        default: bool,
    },
    /// One of `options` (e.g. the Kubernetes versions a template offers).
    Enum {
        options: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
}

fn default_max_len() -> u32 {
    200
}

fn default_text_len() -> u32 {
    256 * 1024
}

impl ParamKind {
    /// The `type` it is sent as: `string`, `text`, `integer`, `boolean` or `enum`.
    pub fn name(&self) -> &'static str {
        match self {
            ParamKind::String { .. } => "string",
            ParamKind::Text { .. } => "text",
            ParamKind::Integer { .. } => "integer",
            ParamKind::Boolean { .. } => "boolean",
            ParamKind::Enum { .. } => "enum",
        }
    }

    /// The bounds of a whole number (none for other types).
    pub fn range(&self) -> (Option<i64>, Option<i64>) {
        match self {
            ParamKind::Integer { min, max, .. } => (*min, *max),
            _ => (None, None),
        }
    }

    /// The choices of an enumeration (none for other types).
    pub fn options(&self) -> &[String] {
        match self {
            ParamKind::Enum { options, .. } => options,
            _ => &[],
        }
    }

    /// The longest text accepted (text types only).
    pub fn max_len(&self) -> Option<u32> {
        match self {
            ParamKind::String { max_len, .. } | ParamKind::Text { max_len } => Some(*max_len),
            _ => None,
        }
    }
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// Machine name: `[a-z][a-z0-9_]*`; reaches installer commands as `KQ_PARAM_<NAME>`.
    pub name: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// Credentials: stored in the vault, never shown again, never logged.
    #[serde(default)]
    pub secret: bool,
    #[serde(flatten)]
    pub kind: ParamKind,
}

impl ParamSpec {
    pub fn new(name: &str, label: &str, kind: ParamKind) -> Self {
        Self {
            name: name.into(),
            label: label.into(),
            help: None,
            required: false,
            secret: false,
            kind,
        }
    }

    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    pub fn secret(mut self) -> Self {
        self.secret = true;
        self
    }

    pub fn help(mut self, help: &str) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The default as form text, if any.
    pub fn default_text(&self) -> Option<String> {
        match &self.kind {
            ParamKind::String { default, .. } => default.clone(),
            ParamKind::Integer { default, .. } => default.map(|d| d.to_string()),
            ParamKind::Boolean { default } => Some(default.to_string()),
            ParamKind::Enum { default, options } => {
                default.clone().or_else(|| options.first().cloned())
            }
            ParamKind::Text { .. } => None,
        }
    }
}

/// A template's refinement of one cluster parameter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamOverride {
    /// A new default (text form of the value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    /// Allowed choices: a subset of the provisioner's, or (for strings) a new enumeration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// A value tenants cannot change (hidden from the request form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{ParamKind, ParamSpec};

    #[test]
    fn a_parameter_is_sent_flat_with_its_type_and_reads_back() {
        let spec = ParamSpec::new(
            "node_count",
            "Nodes",
            ParamKind::Integer {
                default: Some(3),
                min: Some(1),
                max: None,
            },
        )
        .required();
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "node_count", "label": "Nodes", "required": true,
                "secret": false, "type": "integer", "default": 3, "min": 1})
        );
        assert_eq!(serde_json::from_value::<ParamSpec>(json).unwrap(), spec);
        assert_eq!(spec.kind.name(), "integer");
        assert_eq!(spec.kind.range(), (Some(1), None));
        assert_eq!(spec.default_text().as_deref(), Some("3"));
        let text: ParamSpec =
            serde_json::from_value(serde_json::json!({"name": "k", "label": "K", "type": "text"}))
                .unwrap();
        assert_eq!(text.kind.max_len(), Some(256 * 1024));
        assert!(text.kind.options().is_empty());
    }
}
