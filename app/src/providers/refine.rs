//! A template's refinements as form fields: per cluster parameter of the provider's kind,
//! the inputs its type allows, named `o[<parameter>][<field>]`:
//!
//! - `default`, and `fixed` (a value tenants cannot change), for every type but multi-line
//!   text (fixed only);
//! - `min` and `max` for whole numbers;
//! - `choices` for one-line text (comma-separated: the request form then offers a choice);
//! - for a choice, one box per option (`offer][<i>`, its value the option) and `all`, the
//!   options the form showed (one per line), so that a post says which boxes were unticked.
//!
//! An empty input refines nothing; a parameter left as the provider has it is not part of
//! the template's refinements. The core checks what they say (`ParamSchema::refine`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use kqueen_dto::params::{ParamKind, ParamOverride, ParamSpec};

/// The posted inputs of one parameter's refinements (`o[<parameter>][…]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefinementFields {
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default)]
    pub min: Option<String>,
    #[serde(default)]
    pub max: Option<String>,
    #[serde(default)]
    pub fixed: Option<String>,
    /// A one-line text parameter's choices, comma-separated.
    #[serde(default)]
    pub choices: Option<String>,
    /// A choice parameter's ticked options, by the box's index.
    #[serde(default)]
    pub offer: Option<BTreeMap<String, String>>,
    /// A choice parameter's options as the form showed them, one per line.
    #[serde(default)]
    pub all: Option<String>,
}

/// The name of the input `field` of `param`'s refinements.
pub fn input(param: &str, field: &str) -> String {
    format!("o[{param}][{field}]")
}

/// The name of the box offering option number `i` of `param`.
pub fn offer_input(param: &str, i: usize) -> String {
    format!("o[{param}][offer][{i}]")
}

/// Which refinements the inputs of one parameter have, by its type.
pub fn fields_of(param: &ParamSpec) -> &'static [&'static str] {
    match param.kind {
        ParamKind::Integer { .. } => &["default", "min", "max", "fixed"],
        ParamKind::Enum { .. } => &["all", "default", "fixed"],
        ParamKind::String { .. } => &["default", "choices", "fixed"],
        ParamKind::Boolean { .. } => &["default", "fixed"],
        // Multi-line text: a fixed value only, and none for a secret (templates are not
        // encrypted).
        ParamKind::Text { .. } if param.secret => &[],
        ParamKind::Text { .. } => &["fixed"],
    }
}

/// The refinements form's values (input name -> value) for `refinements` of the parameters
/// `schema`: what editing a template shows. A ticked box is present (its option as value),
/// an unticked one absent.
pub fn fields_from_refinements(
    refinements: &BTreeMap<String, ParamOverride>,
    schema: &[ParamSpec],
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in schema {
        let r = refinements.get(&p.name).cloned().unwrap_or_default();
        for field in fields_of(p) {
            let value = match *field {
                "default" => r.default.clone(),
                "min" => r.min.map(|n| n.to_string()),
                "max" => r.max.map(|n| n.to_string()),
                "fixed" => r.fixed.clone(),
                "choices" => r.options.as_ref().map(|o| o.join(", ")),
                "all" => Some(p.kind.options().join("\n")),
                _ => None,
            };
            out.insert(input(&p.name, field), value.unwrap_or_default());
        }
        if let ParamKind::Enum { options, .. } = &p.kind {
            for (i, option) in options.iter().enumerate() {
                if r.options
                    .as_ref()
                    .is_none_or(|offered| offered.contains(option))
                {
                    out.insert(offer_input(&p.name, i), option.clone());
                }
            }
        }
    }
    out
}

/// The posted refinement inputs by name, as a refused form keeps them.
pub fn posted_values(o: &BTreeMap<String, RefinementFields>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (param, f) in o {
        for (field, value) in [
            ("default", &f.default),
            ("min", &f.min),
            ("max", &f.max),
            ("fixed", &f.fixed),
            ("choices", &f.choices),
            ("all", &f.all),
        ] {
            if let Some(v) = value {
                out.insert(input(param, field), v.clone());
            }
        }
        for (i, option) in f.offer.iter().flatten() {
            out.insert(format!("o[{param}][offer][{i}]"), option.clone());
        }
    }
    out
}

/// An input that does not say what it must: the parameter, the input (`min`…) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub param: String,
    pub field: &'static str,
    pub message: &'static str,
}

/// The refinements the posted inputs say, by parameter (those refining nothing left out).
/// Only the form of each value is checked here; what it may be is the core's to say.
pub fn refinements_from_fields(
    o: &BTreeMap<String, RefinementFields>,
) -> Result<BTreeMap<String, ParamOverride>, FieldProblem> {
    fn text(v: &Option<String>) -> Option<String> {
        v.as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    }
    let mut out = BTreeMap::new();
    for (param, f) in o {
        let number = |field: &'static str, v: &Option<String>| {
            text(v)
                .map(|t| t.parse::<i64>())
                .transpose()
                .map_err(|_| FieldProblem {
                    param: param.clone(),
                    field,
                    message: "must be a whole number",
                })
        };
        let options = match text(&f.all) {
            // A choice: the boxes ticked, unless all of them are.
            Some(all) => {
                let all: Vec<&str> = all
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let ticked: Vec<&str> = f.offer.iter().flatten().map(|(_, v)| v.trim()).collect();
                let offered: Vec<String> = all
                    .iter()
                    .filter(|o| ticked.contains(o))
                    .map(|o| (*o).to_owned())
                    .collect();
                (offered.len() != all.len()).then_some(offered)
            }
            None => text(&f.choices).map(|c| {
                c.split([',', '\n'])
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
        };
        let r = ParamOverride {
            default: text(&f.default),
            min: number("min", &f.min)?,
            max: number("max", &f.max)?,
            options,
            fixed: text(&f.fixed),
        };
        if r != ParamOverride::default() {
            out.insert(param.clone(), r);
        }
    }
    Ok(out)
}

#[cfg(feature = "ssr")]
pub use server::culprit;

#[cfg(feature = "ssr")]
mod server {
    use std::collections::BTreeMap;

    use kqueen_core::provisioner::{ParamOverride, ParamSchema};

    /// Which refinement of `param` the schema refuses: they are added one by one (range,
    /// options, default, fixed value), and the first that makes `o` fail is the one at fault
    /// (a default outside the range is the default's fault, a range that leaves the
    /// provider's default out the range's).
    pub fn culprit(schema: &ParamSchema, param: &str, o: &ParamOverride) -> Option<&'static str> {
        let mut partial = ParamOverride::default();
        type Add = fn(&mut ParamOverride, &ParamOverride);
        let steps: [(&'static str, Add); 5] = [
            ("min", |p, o| p.min = o.min),
            ("max", |p, o| p.max = o.max),
            ("options", |p, o| p.options = o.options.clone()),
            ("default", |p, o| p.default = o.default.clone()),
            ("fixed", |p, o| p.fixed = o.fixed.clone()),
        ];
        for (field, add) in steps {
            add(&mut partial, o);
            let one = BTreeMap::from([(param.to_owned(), partial.clone())]);
            if schema.refine(&one).is_err() {
                return Some(field);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Vec<ParamSpec> {
        let options = ["s", "m", "l"].map(str::to_owned).to_vec();
        vec![
            ParamSpec::new(
                "node_count",
                "node_count",
                ParamKind::Integer {
                    default: None,
                    min: None,
                    max: None,
                },
            ),
            ParamSpec::new(
                "kubernetes_version",
                "kubernetes_version",
                ParamKind::String {
                    default: None,
                    max_len: 200,
                },
            ),
            ParamSpec::new(
                "size",
                "size",
                ParamKind::Enum {
                    options,
                    default: None,
                },
            ),
            ParamSpec::new("ha", "ha", ParamKind::Boolean { default: false }),
            ParamSpec::new("script", "script", ParamKind::Text { max_len: 1000 }),
        ]
    }

    /// The posted form for `values` (input name -> value), as the server function reads it.
    fn posted(values: &BTreeMap<String, String>) -> BTreeMap<String, RefinementFields> {
        let mut out: BTreeMap<String, RefinementFields> = BTreeMap::new();
        for (name, value) in values {
            let inner = name.strip_prefix("o[").expect("o[…]");
            let (param, rest) = inner.split_once("][").expect("two keys");
            let f = out.entry(param.to_owned()).or_default();
            let v = Some(value.clone());
            match rest.trim_end_matches(']') {
                "default" => f.default = v,
                "min" => f.min = v,
                "max" => f.max = v,
                "fixed" => f.fixed = v,
                "choices" => f.choices = v,
                "all" => f.all = v,
                offer => {
                    let i = offer.strip_prefix("offer][").expect("offer");
                    f.offer
                        .get_or_insert_with(BTreeMap::new)
                        .insert(i.to_owned(), value.clone());
                }
            }
        }
        out
    }

    #[test]
    fn an_untouched_form_refines_nothing() {
        let values = fields_from_refinements(&BTreeMap::new(), &schema());
        assert_eq!(values["o[size][all]"], "s\nm\nl");
        assert_eq!(values["o[size][offer][1]"], "m", "every option offered");
        assert!(
            !values.contains_key("o[script][default]"),
            "text: fixed only"
        );
        assert!(values.contains_key("o[script][fixed]"));
        assert_eq!(
            refinements_from_fields(&posted(&values)).expect("valid"),
            BTreeMap::new()
        );
    }

    #[test]
    fn refinements_round_trip_through_the_form() {
        let refinements = BTreeMap::from([
            (
                "node_count".to_owned(),
                ParamOverride {
                    max: Some(5),
                    default: Some("2".into()),
                    ..Default::default()
                },
            ),
            (
                "kubernetes_version".to_owned(),
                ParamOverride {
                    options: Some(vec!["1.33".into(), "1.34".into()]),
                    default: Some("1.34".into()),
                    ..Default::default()
                },
            ),
            (
                "size".to_owned(),
                ParamOverride {
                    options: Some(vec!["s".into(), "l".into()]),
                    ..Default::default()
                },
            ),
            (
                "ha".to_owned(),
                ParamOverride {
                    fixed: Some("true".into()),
                    ..Default::default()
                },
            ),
        ]);
        let values = fields_from_refinements(&refinements, &schema());
        assert_eq!(values["o[node_count][max]"], "5");
        assert_eq!(values["o[node_count][min]"], "");
        assert_eq!(values["o[kubernetes_version][choices]"], "1.33, 1.34");
        assert!(!values.contains_key("o[size][offer][1]"), "m unticked");
        assert_eq!(values["o[ha][fixed]"], "true");
        let back = refinements_from_fields(&posted(&values)).expect("valid");
        assert_eq!(back, refinements);
        // What a refused post keeps is what the form shows again.
        assert_eq!(posted_values(&posted(&values)), values);
    }

    #[test]
    fn operators_type_refinements_loosely() {
        let values = BTreeMap::from([
            ("o[node_count][max]".to_owned(), " 7 ".to_owned()),
            (
                "o[kubernetes_version][choices]".to_owned(),
                "1.33,1.34 ,\n 1.35,".to_owned(),
            ),
            ("o[size][all]".to_owned(), "s\nm\nl".to_owned()),
        ]);
        let r = refinements_from_fields(&posted(&values)).expect("valid");
        assert_eq!(r["node_count"].max, Some(7));
        assert_eq!(
            r["kubernetes_version"].options.as_deref(),
            Some(&["1.33".to_owned(), "1.34".to_owned(), "1.35".to_owned()][..])
        );
        assert_eq!(
            r["size"].options,
            Some(vec![]),
            "no box ticked: none offered"
        );
        let bad = BTreeMap::from([("o[node_count][min]".to_owned(), "two".to_owned())]);
        assert_eq!(
            refinements_from_fields(&posted(&bad)),
            Err(FieldProblem {
                param: "node_count".into(),
                field: "min",
                message: "must be a whole number"
            })
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn the_refinement_at_fault_is_found() {
        use kqueen_core::provisioner::{ParamKind, ParamOverride, ParamSchema, ParamSpec};

        let schema = ParamSchema::new(vec![ParamSpec::new(
            "node_count",
            "Nodes",
            ParamKind::Integer {
                default: Some(3),
                min: Some(1),
                max: Some(100),
            },
        )]);
        let culprit = |o: ParamOverride| culprit(&schema, "node_count", &o);
        assert_eq!(
            culprit(ParamOverride {
                min: Some(2),
                max: Some(1000),
                ..Default::default()
            }),
            Some("max")
        );
        assert_eq!(
            culprit(ParamOverride {
                max: Some(5),
                default: Some("9".into()),
                ..Default::default()
            }),
            Some("default")
        );
        assert_eq!(
            culprit(ParamOverride {
                fixed: Some("0".into()),
                ..Default::default()
            }),
            Some("fixed")
        );
        assert_eq!(culprit(ParamOverride::default()), None);
    }
}
