//! A template's refinement of a provisioner's cluster parameters ([`ParamSchema::refine`]):
//! other defaults, tighter ranges, fewer choices, a text turned into a choice, fixed values.
//! A template may narrow what the provisioner offers, never widen it.

use std::collections::BTreeMap;

use super::params::{
    invalid, parse_bool, ParamKind, ParamOverride, ParamSchema, ParamSpec, Params,
};
use crate::ValidationError;

impl ParamSchema {
    /// The schema a template offers: this one narrowed by `overrides`, and the values it
    /// fixes (those parameters leave the schema). Refuses overrides that name unknown
    /// parameters or widen a range.
    pub fn refine(
        &self,
        overrides: &BTreeMap<String, ParamOverride>,
    ) -> Result<(ParamSchema, Params), ValidationError> {
        if let Some(name) = overrides.keys().find(|name| self.get(name).is_none()) {
            return Err(invalid(
                name,
                "is not a parameter of this provider's clusters",
            ));
        }
        let mut specs = Vec::new();
        let mut fixed = Params::new();
        for spec in self.specs() {
            let Some(o) = overrides.get(&spec.name) else {
                specs.push(spec.clone());
                continue;
            };
            let spec = refine_one(spec, o)?;
            match &o.fixed {
                Some(value) => fixed.extend(fixed_value(&spec, value)?),
                None => specs.push(spec),
            }
        }
        let refined = ParamSchema::new(specs);
        refined.check()?;
        Ok((refined, fixed))
    }
}

/// One parameter as `o` refines it.
fn refine_one(spec: &ParamSpec, o: &ParamOverride) -> Result<ParamSpec, ValidationError> {
    let name = &spec.name;
    let kind = match spec.kind.clone() {
        ParamKind::Integer { default, min, max } => integer(name, (default, min, max), o)?,
        ParamKind::Enum { options, default } => choice(name, options, default, o)?,
        ParamKind::String { default, max_len } => match &o.options {
            // Choices for a text: the request form offers them instead.
            Some(options) => ParamKind::Enum {
                options: options.clone(),
                default: o.default.clone(),
            },
            None => ParamKind::String {
                default: o.default.clone().or(default),
                max_len,
            },
        },
        ParamKind::Boolean { default } => ParamKind::Boolean {
            default: match o.default.as_deref() {
                Some(d) => parse_bool(d)
                    .ok_or_else(|| invalid(name, "the default must be true or false"))?,
                None => default,
            },
        },
        other => other,
    };
    if (o.min.is_some() || o.max.is_some()) && !matches!(kind, ParamKind::Integer { .. }) {
        return Err(invalid(
            name,
            "a minimum or maximum applies to whole numbers only",
        ));
    }
    Ok(ParamSpec {
        kind,
        ..spec.clone()
    })
}

/// A whole number's range narrowed (never widened) and its default, within it.
fn integer(
    name: &str,
    (default, own_min, own_max): (Option<i64>, Option<i64>, Option<i64>),
    o: &ParamOverride,
) -> Result<ParamKind, ValidationError> {
    let min = match (own_min, o.min) {
        (Some(own), Some(m)) if m < own => {
            return Err(invalid(
                name,
                format!("the minimum cannot be below {own}, the provider's own"),
            ))
        }
        (own, m) => m.or(own),
    };
    let max = match (own_max, o.max) {
        (Some(own), Some(m)) if m > own => {
            return Err(invalid(
                name,
                format!("the maximum cannot be above {own}, the provider's own"),
            ))
        }
        (own, m) => m.or(own),
    };
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(invalid(
                name,
                format!("the minimum ({lo}) is above the maximum ({hi})"),
            ));
        }
    }
    let outside = |n: i64| min.is_some_and(|lo| n < lo) || max.is_some_and(|hi| n > hi);
    let default = match &o.default {
        Some(d) => {
            let n: i64 = d
                .trim()
                .parse()
                .map_err(|_| invalid(name, "the default must be a whole number"))?;
            if outside(n) {
                let range = match (min, max) {
                    (Some(lo), Some(hi)) => format!("from {lo} to {hi}"),
                    (Some(lo), None) => format!("at least {lo}"),
                    (None, _) => format!("at most {}", max.unwrap_or(n)),
                };
                return Err(invalid(name, format!("the default must be {range}")));
            }
            Some(n)
        }
        None => match default {
            Some(d) if outside(d) => {
                return Err(invalid(
                    name,
                    format!(
                        "the provider's default ({d}) is outside this range: set a default \
                         within it"
                    ),
                ))
            }
            other => other,
        },
    };
    Ok(ParamKind::Integer { default, min, max })
}

/// A choice's options narrowed to a subset of the provisioner's, and its default among them.
fn choice(
    name: &str,
    options: Vec<String>,
    default: Option<String>,
    o: &ParamOverride,
) -> Result<ParamKind, ValidationError> {
    let options = match &o.options {
        Some(sub) => {
            if let Some(bad) = sub.iter().find(|v| !options.contains(v)) {
                return Err(invalid(
                    name,
                    format!("'{bad}' is not one of its options ({})", options.join(", ")),
                ));
            }
            sub.clone()
        }
        None => options,
    };
    let default = o
        .default
        .clone()
        .or(default)
        .filter(|d| options.contains(d));
    Ok(ParamKind::Enum { options, default })
}

/// The value a template fixes for `spec`, checked as a request's would be.
fn fixed_value(spec: &ParamSpec, value: &str) -> Result<Params, ValidationError> {
    let one = ParamSchema::new(vec![spec.clone()]);
    let input: Params = [(spec.name.clone(), value.to_owned())].into();
    one.validate(&input)
        .map_err(|e| invalid(&spec.name, format!("the fixed value {}", e.message)))
}
