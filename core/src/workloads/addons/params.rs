//! An addon's typed parameters: what an operator may declare, and how a value a person
//! typed is checked and turned into the manifest's typed value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ValidationError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    String,
    Integer,
    Boolean,
    Enum,
}

impl ParamType {
    /// A checked value as the manifests get it.
    pub fn typed(self, value: &str) -> Value {
        match self {
            ParamType::Integer => value
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(value.to_owned())),
            ParamType::Boolean => Value::Bool(value == "true"),
            ParamType::String | ParamType::Enum => Value::String(value.to_owned()),
        }
    }
}

/// One parameter. `default` is always text (as a form shows it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddonParam {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ParamType,
    pub default: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    /// An anchored regular expression strings must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl AddonParam {
    pub fn integer(name: &str, default: &str, min: i64, max: i64) -> Self {
        Self {
            name: name.into(),
            kind: ParamType::Integer,
            default: default.into(),
            description: String::new(),
            min: Some(min),
            max: Some(max),
            pattern: None,
            options: vec![],
        }
    }

    pub fn string(name: &str, default: &str, pattern: Option<&str>) -> Self {
        Self {
            name: name.into(),
            kind: ParamType::String,
            default: default.into(),
            description: String::new(),
            min: None,
            max: None,
            pattern: pattern.map(str::to_owned),
            options: vec![],
        }
    }

    /// Checks one value; the message is for the person who typed it.
    pub fn check(&self, value: &str) -> Result<String, String> {
        let value = value.trim();
        match self.kind {
            ParamType::Integer => {
                let n: i64 = value
                    .parse()
                    .map_err(|_| "must be a whole number".to_owned())?;
                if self.min.is_some_and(|m| n < m) || self.max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "must be between {} and {}",
                        self.min.map_or("…".into(), |m| m.to_string()),
                        self.max.map_or("…".into(), |m| m.to_string())
                    ));
                }
                Ok(n.to_string())
            }
            ParamType::Boolean => match value {
                "true" | "on" | "yes" => Ok("true".into()),
                "false" | "off" | "no" | "" => Ok("false".into()),
                _ => Err("must be true or false".into()),
            },
            ParamType::Enum => {
                if self.options.iter().any(|o| o == value) {
                    Ok(value.to_owned())
                } else {
                    Err(format!("must be one of {}", self.options.join(", ")))
                }
            }
            ParamType::String => {
                if value.len() > 200 || value.chars().any(char::is_control) {
                    return Err("must be one line of at most 200 characters".into());
                }
                if let Some(p) = &self.pattern {
                    let re = regex_lite::Regex::new(p).map_err(|_| {
                        "cannot be checked (the addon's pattern is broken)".to_owned()
                    })?;
                    if !re.is_match(value) {
                        return Err(format!("must match {p}"));
                    }
                }
                Ok(value.to_owned())
            }
        }
    }
}

/// Checks declared parameters: names, types' extra fields, defaults that pass their check.
pub(super) fn check_params(params: &[AddonParam]) -> Result<(), ValidationError> {
    let mut seen = std::collections::BTreeSet::new();
    for p in params {
        let ok_name = !p.name.is_empty()
            && p.name.len() <= 50
            && p.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !ok_name {
            return Err(ValidationError::at(
                "parameters",
                p.name.clone(),
                "names are lowercase letters, digits and '_'",
            ));
        }
        if !seen.insert(p.name.clone()) {
            return Err(ValidationError::at(
                "parameters",
                p.name.clone(),
                "is declared twice",
            ));
        }
        if p.kind == ParamType::Enum && p.options.is_empty() {
            return Err(ValidationError::at(
                "parameters",
                p.name.clone(),
                "lists no options",
            ));
        }
        if let Some(pattern) = &p.pattern {
            if regex_lite::Regex::new(pattern).is_err() {
                return Err(ValidationError::at(
                    "parameters",
                    p.name.clone(),
                    "has a pattern that is not a regular expression",
                ));
            }
        }
        p.check(&p.default).map_err(|m| {
            ValidationError::at("parameters", p.name.clone(), format!("default {m}"))
        })?;
    }
    Ok(())
}

/// `given` checked against `params`, completed with defaults; unknown names are refused.
pub(super) fn values(
    params: &[AddonParam],
    given: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ValidationError> {
    for name in given.keys() {
        if !params.iter().any(|p| &p.name == name) {
            return Err(ValidationError::at(
                "parameters",
                name.clone(),
                "is not a parameter of this addon",
            ));
        }
    }
    params
        .iter()
        .map(|p| {
            let raw = given.get(&p.name).unwrap_or(&p.default);
            p.check(raw)
                .map(|v| (p.name.clone(), v))
                .map_err(|m| ValidationError::at("parameters", p.name.clone(), m))
        })
        .collect()
}
