//! Parameter schemas: what a provider's settings and a cluster request consist of.
//!
//! A provisioner declares two schemas ([`super::Provisioner::provider_schema`] and
//! [`super::Provisioner::cluster_schema`]); a template narrows the cluster schema with
//! [`ParamOverride`]s (other defaults, tighter ranges, fewer choices, fixed values). The
//! portal renders forms from the effective schema, and [`ParamSchema::validate`] checks what
//! comes back, so the browser, the API and the CLI get the same answers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use kqueen_dto::params::{ParamKind, ParamOverride, ParamSpec};

use crate::ValidationError;

/// A template's refinements from their JSON text (an object with one entry per parameter),
/// empty text meaning none. Errors say what is wrong in words for the operator who typed
/// it: where the JSON breaks (line and column), or which parameter's entry is wrong and how.
pub fn parse_overrides(text: &str) -> Result<BTreeMap<String, ParamOverride>, ValidationError> {
    use serde_json::Value;

    let text = text.trim();
    if text.is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ValidationError::new(
            "overrides",
            format!(
                "is not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    let Value::Object(entries) = value else {
        return Err(ValidationError::new(
            "overrides",
            r#"must be an object with one entry per parameter, like {"node_count": {"max": 5}}"#,
        ));
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let mut out = BTreeMap::new();
    for (name, entry) in entries {
        let wrong = |message: String| ValidationError::at("overrides", name.clone(), message);
        let Value::Object(fields) = entry else {
            return Err(wrong(
                r#"must be an object of refinements, like {"max": 5}"#.to_owned(),
            ));
        };
        let mut o = ParamOverride::default();
        for (key, v) in fields {
            match key.as_str() {
                "default" | "fixed" => {
                    let text = scalar(&v).ok_or_else(|| {
                        wrong(format!("its {key} must be a text, a number or true/false"))
                    })?;
                    if key == "default" {
                        o.default = Some(text);
                    } else {
                        o.fixed = Some(text);
                    }
                }
                "min" | "max" => {
                    let n = match &v {
                        Value::Number(n) => n.as_i64(),
                        Value::String(s) => s.trim().parse().ok(),
                        _ => None,
                    }
                    .ok_or_else(|| wrong(format!("its {key} must be a whole number")))?;
                    if key == "min" {
                        o.min = Some(n);
                    } else {
                        o.max = Some(n);
                    }
                }
                "options" => {
                    let list = match &v {
                        Value::Array(items) => items.iter().map(scalar).collect::<Option<Vec<_>>>(),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        wrong(r#"its options must be a list, like ["1.33", "1.34"]"#.to_owned())
                    })?;
                    o.options = Some(list);
                }
                other => {
                    return Err(wrong(format!(
                        "'{other}' is not a refinement (use default, min, max, options or fixed)"
                    )))
                }
            }
        }
        out.insert(name, o);
    }
    Ok(out)
}

/// Validated parameter values as text, by name (what reaches provisioners).
pub type Params = BTreeMap<String, String>;

/// An ordered list of parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ParamSchema(pub Vec<ParamSpec>);

pub(super) fn invalid(field: &str, message: impl Into<String>) -> ValidationError {
    ValidationError::at("parameters", field, message)
}

impl ParamSchema {
    pub fn new(specs: Vec<ParamSpec>) -> Self {
        Self(specs)
    }

    pub fn specs(&self) -> &[ParamSpec] {
        &self.0
    }

    pub fn get(&self, name: &str) -> Option<&ParamSpec> {
        self.0.iter().find(|s| s.name == name)
    }

    /// Checks that the schema itself is well formed (names, ranges, defaults within them).
    pub fn check(&self) -> Result<(), ValidationError> {
        let mut seen = std::collections::BTreeSet::new();
        for spec in &self.0 {
            let ok_name = spec.name.len() <= 40
                && spec.name.starts_with(|c: char| c.is_ascii_lowercase())
                && spec
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !ok_name {
                return Err(invalid(
                    &spec.name,
                    "names are 1-40 characters of a-z, 0-9 and _, starting with a letter",
                ));
            }
            if !seen.insert(spec.name.as_str()) {
                return Err(invalid(&spec.name, "appears twice"));
            }
            match &spec.kind {
                ParamKind::Integer { default, min, max } => {
                    if let (Some(lo), Some(hi)) = (min, max) {
                        if lo > hi {
                            return Err(invalid(&spec.name, "the minimum is above the maximum"));
                        }
                    }
                    if let Some(d) = default {
                        check_range(&spec.name, *d, *min, *max)?;
                    }
                }
                ParamKind::Enum { options, default } => {
                    if options.is_empty() {
                        return Err(invalid(&spec.name, "needs at least one option"));
                    }
                    if let Some(d) = default {
                        if !options.contains(d) {
                            return Err(invalid(
                                &spec.name,
                                "the default is not one of the options",
                            ));
                        }
                    }
                }
                ParamKind::String { default, max_len } => {
                    if let Some(d) = default {
                        if d.chars().count() > *max_len as usize {
                            return Err(invalid(&spec.name, "the default is too long"));
                        }
                    }
                }
                ParamKind::Text { .. } | ParamKind::Boolean { .. } => {}
            }
        }
        Ok(())
    }

    /// Validates submitted values (form text or JSON scalars rendered as text): unknown names
    /// are refused, missing ones take their default, required ones must be present.
    pub fn validate(&self, input: &Params) -> Result<Params, ValidationError> {
        for name in input.keys() {
            if self.get(name).is_none() {
                return Err(invalid(name, "unknown parameter"));
            }
        }
        let mut out = Params::new();
        for spec in &self.0 {
            let raw = input
                .get(&spec.name)
                .map(|v| {
                    if matches!(spec.kind, ParamKind::Text { .. }) {
                        v.clone()
                    } else {
                        v.trim().to_owned()
                    }
                })
                .filter(|v| !v.is_empty());
            let value = match (raw, &spec.kind) {
                (None, ParamKind::Boolean { default }) if !input.contains_key(&spec.name) => {
                    Some(default.to_string())
                }
                // A checkbox that is not ticked sends nothing: false.
                (None, ParamKind::Boolean { .. }) => Some("false".into()),
                (None, _) => spec.default_text(),
                (Some(v), _) => Some(v),
            };
            let Some(value) = value else {
                if spec.required {
                    return Err(invalid(&spec.name, "is required"));
                }
                continue;
            };
            let value = match &spec.kind {
                ParamKind::String { max_len, .. } | ParamKind::Text { max_len } => {
                    if value.chars().count() > *max_len as usize {
                        return Err(invalid(
                            &spec.name,
                            format!("must be at most {max_len} characters"),
                        ));
                    }
                    if matches!(spec.kind, ParamKind::String { .. })
                        && value.chars().any(char::is_control)
                    {
                        return Err(invalid(&spec.name, "must be one line of text"));
                    }
                    value
                }
                ParamKind::Integer { min, max, .. } => {
                    let n: i64 = value
                        .parse()
                        .map_err(|_| invalid(&spec.name, "must be a whole number"))?;
                    check_range(&spec.name, n, *min, *max)?;
                    n.to_string()
                }
                ParamKind::Boolean { .. } => parse_bool(&value)
                    .ok_or_else(|| invalid(&spec.name, "must be true or false"))?
                    .to_string(),
                ParamKind::Enum { options, .. } => {
                    if !options.contains(&value) {
                        return Err(invalid(
                            &spec.name,
                            format!("must be one of: {}", options.join(", ")),
                        ));
                    }
                    value
                }
            };
            out.insert(spec.name.clone(), value);
        }
        Ok(out)
    }
}

fn check_range(
    name: &str,
    n: i64,
    min: Option<i64>,
    max: Option<i64>,
) -> Result<(), ValidationError> {
    if let Some(lo) = min {
        if n < lo {
            return Err(invalid(name, format!("must be at least {lo}")));
        }
    }
    if let Some(hi) = max {
        if n > hi {
            return Err(invalid(name, format!("must be at most {hi}")));
        }
    }
    Ok(())
}

pub(super) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "true" | "on" | "yes" | "1" => Some(true),
        "false" | "off" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// Converts a JSON object of scalars to [`Params`] (API input).
pub fn params_from_json(
    value: &serde_json::Map<String, serde_json::Value>,
) -> Result<Params, ValidationError> {
    let mut out = Params::new();
    for (k, v) in value {
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Null => continue,
            _ => return Err(invalid(k, "must be a string, number or boolean")),
        };
        out.insert(k.clone(), text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new(
                "node_count",
                "Nodes",
                ParamKind::Integer {
                    default: Some(3),
                    min: Some(1),
                    max: Some(50),
                },
            ),
            ParamSpec::new(
                "version",
                "Kubernetes version",
                ParamKind::Enum {
                    options: vec!["1.33".into(), "1.34".into(), "1.35".into()],
                    default: Some("1.35".into()),
                },
            ),
            ParamSpec::new("ha", "HA", ParamKind::Boolean { default: false }),
            ParamSpec::new(
                "region",
                "Region",
                ParamKind::String {
                    default: None,
                    max_len: 20,
                },
            )
            .required(),
        ])
    }

    fn input(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn validates_with_defaults_and_ranges() {
        let s = schema();
        s.check().expect("well formed");
        let v = s.validate(&input(&[("region", "eu-1")])).expect("valid");
        assert_eq!(v["node_count"], "3");
        assert_eq!(v["version"], "1.35");
        assert_eq!(v["ha"], "false");
        let err = |i: &[(&str, &str)]| s.validate(&input(i)).expect_err("invalid").to_string();
        assert!(err(&[]).contains("region: is required"));
        assert!(err(&[("region", "x"), ("node_count", "0")]).contains("at least 1"));
        assert!(err(&[("region", "x"), ("node_count", "51")]).contains("at most 50"));
        assert!(err(&[("region", "x"), ("node_count", "two")]).contains("whole number"));
        assert!(err(&[("region", "x"), ("version", "1.20")]).contains("one of"));
        assert!(err(&[("region", "x"), ("color", "red")]).contains("unknown"));
        assert!(err(&[("region", "x\ny")]).contains("one line"));
        assert!(err(&[("region", &"x".repeat(21))]).contains("at most 20"));
    }

    #[test]
    fn templates_narrow_but_never_widen() {
        let s = schema();
        let mut o = BTreeMap::new();
        o.insert(
            "node_count".to_owned(),
            ParamOverride {
                max: Some(5),
                default: Some("2".into()),
                ..Default::default()
            },
        );
        o.insert(
            "version".to_owned(),
            ParamOverride {
                options: Some(vec!["1.34".into(), "1.35".into()]),
                ..Default::default()
            },
        );
        o.insert(
            "region".to_owned(),
            ParamOverride {
                fixed: Some("eu-1".into()),
                ..Default::default()
            },
        );
        let (refined, fixed) = s.refine(&o).expect("narrows");
        assert_eq!(fixed["region"], "eu-1");
        assert!(
            refined.get("region").is_none(),
            "fixed values are not asked"
        );
        assert_eq!(
            refined.get("node_count").map(|p| p.kind.clone()),
            Some(ParamKind::Integer {
                default: Some(2),
                min: Some(1),
                max: Some(5)
            })
        );
        assert!(refined.validate(&input(&[("version", "1.33")])).is_err());

        let widen = BTreeMap::from([(
            "node_count".to_owned(),
            ParamOverride {
                max: Some(500),
                ..Default::default()
            },
        )]);
        assert!(s.refine(&widen).is_err());
        let unknown = BTreeMap::from([("nope".to_owned(), ParamOverride::default())]);
        assert!(s.refine(&unknown).is_err());
        let bad_default = BTreeMap::from([(
            "node_count".to_owned(),
            ParamOverride {
                default: Some("99".into()),
                ..Default::default()
            },
        )]);
        assert!(s.refine(&bad_default).is_err(), "default outside the range");
    }

    #[test]
    fn refinement_errors_name_the_parameter_in_plain_words() {
        let s = schema();
        let refuse = |name: &str, o: ParamOverride| {
            let e = s
                .refine(&BTreeMap::from([(name.to_owned(), o)]))
                .expect_err("refused");
            assert_eq!(e.key.as_deref(), Some(name));
            e.message
        };
        let int = |min, max, default: Option<&str>| ParamOverride {
            min,
            max,
            default: default.map(str::to_owned),
            ..Default::default()
        };
        assert_eq!(
            refuse("node_count", int(None, Some(500), None)),
            "the maximum cannot be above 50, the provider's own"
        );
        assert_eq!(
            refuse("node_count", int(Some(0), None, None)),
            "the minimum cannot be below 1, the provider's own"
        );
        assert_eq!(
            refuse("node_count", int(Some(5), Some(4), None)),
            "the minimum (5) is above the maximum (4)"
        );
        assert_eq!(
            refuse("node_count", int(None, Some(5), Some("7"))),
            "the default must be from 1 to 5"
        );
        assert_eq!(
            refuse("node_count", int(None, None, Some("two"))),
            "the default must be a whole number"
        );
        assert_eq!(
            refuse("node_count", int(Some(4), None, None)),
            "the provider's default (3) is outside this range: set a default within it"
        );
        assert_eq!(
            refuse("nope", ParamOverride::default()),
            "is not a parameter of this provider's clusters"
        );
        let options = |list: &[&str]| ParamOverride {
            options: Some(list.iter().map(|o| (*o).to_owned()).collect()),
            ..Default::default()
        };
        assert_eq!(
            refuse("version", options(&["1.20"])),
            "'1.20' is not one of its options (1.33, 1.34, 1.35)"
        );
        assert_eq!(
            refuse("region", int(Some(1), None, None)),
            "a minimum or maximum applies to whole numbers only"
        );
        let fixed = |v: &str| ParamOverride {
            fixed: Some(v.into()),
            ..Default::default()
        };
        assert_eq!(
            refuse("node_count", fixed("51")),
            "the fixed value must be at most 50"
        );
        assert_eq!(
            refuse(
                "ha",
                ParamOverride {
                    default: Some("maybe".into()),
                    ..Default::default()
                }
            ),
            "the default must be true or false"
        );
        // A text parameter's choices make it a choice among them.
        let (refined, _) = s
            .refine(&BTreeMap::from([(
                "region".to_owned(),
                options(&["eu-1", "us-1"]),
            )]))
            .expect("choices");
        assert_eq!(
            refined.get("region").map(|p| p.kind.clone()),
            Some(ParamKind::Enum {
                options: vec!["eu-1".into(), "us-1".into()],
                default: None
            })
        );
    }

    #[test]
    fn malformed_schemas_are_refused() {
        let bad = ParamSchema::new(vec![ParamSpec::new(
            "Bad-Name",
            "x",
            ParamKind::Boolean { default: false },
        )]);
        assert!(bad.check().is_err());
        let twice = ParamSchema::new(vec![
            ParamSpec::new("a", "a", ParamKind::Boolean { default: false }),
            ParamSpec::new("a", "a", ParamKind::Boolean { default: false }),
        ]);
        assert!(twice.check().is_err());
        let json = r#"[{"name":"n","label":"N","type":"integer","min":1,"max":3,"default":2}]"#;
        let parsed: ParamSchema = serde_json::from_str(json).expect("json schema");
        parsed.check().expect("valid");
    }
    fn error(text: &str) -> (Option<String>, String) {
        let e = parse_overrides(text).expect_err("refused");
        assert_eq!(e.field, "overrides");
        (e.key, e.message)
    }

    #[test]
    fn refinements_parse_from_json() {
        assert!(parse_overrides("  ").expect("empty").is_empty());
        let o = parse_overrides(
            r#"{"node_count": {"max": 5, "default": 2}, "v": {"options": ["1.33", 1.34], "fixed": "1.33"}}"#,
        )
        .expect("valid");
        assert_eq!(o["node_count"].max, Some(5));
        assert_eq!(o["node_count"].default.as_deref(), Some("2"));
        assert_eq!(
            o["v"].options.as_deref(),
            Some(&["1.33".to_owned(), "1.34".to_owned()][..])
        );
        assert_eq!(o["v"].fixed.as_deref(), Some("1.33"));
    }

    #[test]
    fn json_errors_are_said_without_parser_jargon() {
        assert_eq!(
            error("{\n  \"node_count\": {\"max\": 5,}\n}"),
            (None, "is not valid JSON (line 2, column 27)".to_owned())
        );
        assert_eq!(error("{").1, "is not valid JSON (line 1, column 1)");
        assert!(error("[1]")
            .1
            .starts_with("must be an object with one entry per parameter"));
        let (key, message) = error(r#"{"node_count": 5}"#);
        assert_eq!(key.as_deref(), Some("node_count"));
        assert!(
            message.starts_with("must be an object of refinements"),
            "{message}"
        );
        let (key, message) = error(r#"{"node_count": {"maxx": 5}}"#);
        assert_eq!(key.as_deref(), Some("node_count"));
        assert_eq!(
            message,
            "'maxx' is not a refinement (use default, min, max, options or fixed)"
        );
        assert_eq!(
            error(r#"{"node_count": {"max": "five"}}"#).1,
            "its max must be a whole number"
        );
        assert!(error(r#"{"v": {"options": "1.33"}}"#)
            .1
            .starts_with("its options must be a list"));
        for text in [r#"{"a": {"max": 5,}}"#, "{\"a\": {\"max\": 5}"] {
            let message = error(text).1;
            assert!(
                !message.contains("EOF")
                    && !message.contains("trailing")
                    && !message.contains("expected"),
                "{message}"
            );
        }
    }
}
