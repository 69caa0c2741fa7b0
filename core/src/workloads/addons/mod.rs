//! Addons: cluster-wide components (metrics-server, an ingress controller…) that operators
//! define once and tenants switch on per cluster. A definition holds multi-document
//! manifests with a few typed parameters, rendered by KQueen on the parsed objects (a scalar
//! that is exactly `${name}` becomes the typed value; `${name}` inside a longer string
//! becomes its text), so no template language and no shell ever runs. [`builtin`] is the
//! catalog KQueen ships; [`state`] says how an installed addon is doing.

pub mod builtin;
pub mod installed;
mod params;
pub mod state;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{parse_manifests, ManifestLimits, ManifestObject};
use super::refs::{label_value, ApplySet, ADDON_LABEL};
use crate::kubernetes::{MANAGED_BY, MANAGED_BY_LABEL};
use crate::ValidationError;

pub use params::{AddonParam, ParamType};

/// A well-known object: a health rule's workload, or what reveals an addon installed by
/// someone else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WellKnown {
    /// Deployment, DaemonSet or StatefulSet.
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// When an installed addon is healthy: these workloads available, these APIServices
/// Available.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthRule {
    #[serde(default)]
    pub workloads: Vec<WellKnown>,
    #[serde(default)]
    pub api_services: Vec<String>,
}

/// One version of an addon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddonDefinition {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    /// Where namespaced objects without a namespace go.
    pub namespace: String,
    #[serde(default)]
    pub parameters: Vec<AddonParam>,
    #[serde(default)]
    pub health: HealthRule,
    /// Addons that must be installed first.
    #[serde(default)]
    pub requires: Vec<String>,
    #[serde(default)]
    pub detect: Vec<WellKnown>,
    /// Multi-document YAML with `${parameter}` placeholders.
    #[serde(default)]
    pub manifests: String,
    /// Shipped with KQueen (cannot be removed from the catalog).
    #[serde(default)]
    pub builtin: bool,
}

/// Workload kinds a health rule or a detection may name.
const WORKLOAD_KINDS: &[&str] = &["Deployment", "DaemonSet", "StatefulSet"];

impl AddonDefinition {
    /// Checks a definition as an operator submits it: names, parameters and their
    /// defaults, health rule, and manifests that parse and use only declared parameters.
    pub fn check(&self) -> Result<(), ValidationError> {
        let label = |field: &'static str, v: &str, max: usize| {
            let ok = !v.is_empty()
                && v.len() <= max
                && v.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !v.starts_with('-')
                && !v.ends_with('-');
            if ok {
                Ok(())
            } else {
                Err(ValidationError::new(
                    field,
                    format!("must be at most {max} lowercase letters, digits and '-'"),
                ))
            }
        };
        label("name", &self.name, 50)?;
        label("namespace", &self.namespace, 63)?;
        super::application::check_version(&self.version)?;
        if self.description.len() > 500 {
            return Err(ValidationError::new(
                "description",
                "is longer than 500 characters",
            ));
        }
        params::check_params(&self.parameters)?;
        for w in self.health.workloads.iter().chain(&self.detect) {
            if !WORKLOAD_KINDS.contains(&w.kind.as_str()) {
                return Err(ValidationError::new(
                    "health",
                    format!("{} is not a Deployment, DaemonSet or StatefulSet", w.kind),
                ));
            }
        }
        for r in &self.requires {
            if r == &self.name {
                return Err(ValidationError::new(
                    "requires",
                    "an addon cannot need itself",
                ));
            }
        }
        self.render(&BTreeMap::new()).map(|_| ())
    }

    /// The parameters given (as typed by a person) checked and completed with defaults.
    pub fn values(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, ValidationError> {
        params::values(&self.parameters, given)
    }

    /// The objects to apply, with `given` parameters (defaults for the rest).
    pub fn render(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<Vec<ManifestObject>, ValidationError> {
        let values = self.values(given)?;
        let typed: BTreeMap<&str, Value> = self
            .parameters
            .iter()
            .filter_map(|p| {
                values
                    .get(&p.name)
                    .map(|v| (p.name.as_str(), p.kind.typed(v)))
            })
            .collect();
        let mut objects = parse_manifests(&self.manifests, &ManifestLimits::default())?;
        for obj in &mut objects {
            substitute(&mut obj.object, &typed).map_err(|name| {
                ValidationError::at(
                    "manifests",
                    format!("document {}", obj.document),
                    format!(
                        "document {} ({} {}): ${{{name}}} is not a parameter of this addon",
                        obj.document, obj.kind, obj.name
                    ),
                )
            })?;
        }
        if objects.is_empty() {
            return Err(ValidationError::new("manifests", "hold no object"));
        }
        Ok(objects)
    }

    /// The addon's ApplySet in a cluster: a ConfigMap `kqueen-addon-<name>` in its
    /// namespace, members labelled as KQueen's and as this addon's.
    pub fn apply_set(&self) -> ApplySet {
        ApplySet::new(
            &format!("kqueen-addon-{}", self.name),
            &self.namespace,
            [
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
                (ADDON_LABEL.to_owned(), label_value(&self.name)),
            ]
            .into(),
        )
    }
}

/// Replaces placeholders in every string of `v`; Err names an undeclared one.
fn substitute(v: &mut Value, typed: &BTreeMap<&str, Value>) -> Result<(), String> {
    match v {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
                if !name.contains(['$', '{', '}']) {
                    *v = typed.get(name).cloned().ok_or_else(|| name.to_owned())?;
                    return Ok(());
                }
            }
            let mut out = String::with_capacity(s.len());
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                out.push_str(&rest[..start]);
                let after = &rest[start + 2..];
                let Some(end) = after.find('}') else {
                    out.push_str(&rest[start..]);
                    rest = "";
                    break;
                };
                let name = &after[..end];
                let value = typed.get(name).ok_or_else(|| name.to_owned())?;
                match value {
                    Value::String(t) => out.push_str(t),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            *s = out;
            Ok(())
        }
        Value::Array(items) => items.iter_mut().try_for_each(|i| substitute(i, typed)),
        Value::Object(map) => map.values_mut().try_for_each(|i| substitute(i, typed)),
        _ => Ok(()),
    }
}

/// Orders versions by their numeric parts (`0.10.1` after `0.9.3`), then as text.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<u64> {
        v.trim_start_matches('v')
            .split(['.', '-', '_'])
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a).cmp(&parts(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn def(manifests: &str) -> AddonDefinition {
        AddonDefinition {
            name: "demo".into(),
            version: "1.0.0".into(),
            description: String::new(),
            namespace: "demo".into(),
            parameters: vec![
                AddonParam::integer("replicas", "2", 1, 5),
                AddonParam::string("flag", "15s", Some("^[0-9]+s$")),
            ],
            health: HealthRule::default(),
            requires: vec![],
            detect: vec![],
            manifests: manifests.into(),
            builtin: false,
        }
    }

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n\
        spec:\n  replicas: ${replicas}\n  template:\n    spec:\n      containers:\n      \
        - name: a\n        args: [\"--every=${flag}\", \"--n=${replicas}\"]\n";

    #[test]
    fn placeholders_become_typed_values_or_text() {
        let objects = def(DEPLOYMENT)
            .render(&[("replicas".to_owned(), "3".to_owned())].into())
            .unwrap();
        let o = &objects[0].object;
        assert_eq!(o["spec"]["replicas"], serde_json::json!(3));
        let args = &o["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args[0], "--every=15s");
        assert_eq!(args[1], "--n=3");
    }

    #[test]
    fn values_are_checked_against_their_types() {
        let d = def(DEPLOYMENT);
        for (k, v) in [
            ("replicas", "9"),
            ("replicas", "x"),
            ("flag", "5m"),
            ("nope", "1"),
        ] {
            let err = d
                .render(&[(k.to_owned(), v.to_owned())].into())
                .unwrap_err();
            assert_eq!(err.key.as_deref(), Some(k), "{k}={v}: {err}");
        }
    }

    #[test]
    fn undeclared_placeholders_are_refused() {
        let err =
            def("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: ${secret}\n")
                .check()
                .unwrap_err();
        assert!(
            err.message.contains("${secret} is not a parameter"),
            "{err}"
        );
    }

    #[test]
    fn versions_compare_by_number() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("0.10.1", "0.9.3"), Greater);
        assert_eq!(compare_versions("v1.2", "1.2"), Greater);
        assert_eq!(compare_versions("1.2.0", "1.2.0"), Equal);
        assert_eq!(compare_versions("1.11.3", "1.12.0"), Less);
    }

    #[test]
    fn every_builtin_addon_checks_and_renders() {
        for d in builtin::catalog() {
            d.check()
                .unwrap_or_else(|e| panic!("{} {}: {e}", d.name, d.version));
            let objects = d.render(&BTreeMap::new()).unwrap();
            assert!(!objects.is_empty());
            assert!(d.builtin);
        }
        let names: Vec<String> = builtin::catalog().into_iter().map(|d| d.name).collect();
        for n in [
            "metrics-server",
            "ingress-nginx",
            "cert-manager",
            "kubernetes-dashboard",
        ] {
            assert!(names.iter().any(|x| x == n), "{n}");
        }
    }
}
