//! Checking one object of a manifest: what KQueen needs to apply it by name. Names are
//! DNS-1123 subdomains, except for the RBAC kinds, whose names Kubernetes allows to be any
//! path segment (`system:aggregated-metrics-reader`).

use crate::kubernetes::{is_dns_label, is_dns_subdomain};
use serde_json::{Map, Value};

use super::{at_document, clip, ManifestObject};
use crate::ValidationError;

/// Where an object is, for messages: its document, its item in a `List`, its kind and name
/// once known.
#[derive(Default)]
pub(super) struct Place<'a> {
    pub document: usize,
    pub item: Option<usize>,
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
}

impl Place<'_> {
    /// `document 3 (Deployment web): {message}`.
    pub fn error(&self, message: &str) -> ValidationError {
        let mut label = Vec::new();
        if let Some(item) = self.item {
            label.push(format!("item {item}"));
        }
        let what: Vec<String> = [self.kind, self.name]
            .into_iter()
            .flatten()
            .map(clip)
            .collect();
        if !what.is_empty() {
            label.push(what.join(" "));
        }
        if label.is_empty() {
            at_document(self.document, message)
        } else {
            let label = label.join(", ");
            at_document(self.document, &format!("({label}): {message}"))
        }
    }
}

/// Checks `fields` as a Kubernetes object and returns it as a [`ManifestObject`].
pub(super) fn check(
    fields: Map<String, Value>,
    document: usize,
    item: Option<usize>,
) -> Result<ManifestObject, ValidationError> {
    let mut place = Place {
        document,
        item,
        ..Place::default()
    };
    let api_version = text(&fields, "apiVersion").map_err(|m| place.error(&m))?;
    let kind = text(&fields, "kind").map_err(|m| place.error(&m))?;
    place.kind = Some(kind);
    if !valid_api_version(api_version) {
        return Err(place.error(&format!(
            "apiVersion {} is not of the form group/version or version",
            quote(api_version)
        )));
    }
    if !kind.starts_with(|c: char| c.is_ascii_alphabetic())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return Err(place.error("kind must be letters and digits, starting with a letter"));
    }
    let metadata = match fields.get("metadata") {
        None | Some(Value::Null) => &Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(place.error("metadata must be a mapping")),
    };
    let name = match metadata.get("name") {
        Some(Value::String(n)) if !n.is_empty() => n.as_str(),
        Some(Value::String(_)) | Some(Value::Null) | None => {
            return Err(place.error(if metadata.contains_key("generateName") {
                "metadata.generateName is not supported: KQueen applies objects with \
                 server-side apply, which needs a metadata.name"
            } else {
                "metadata.name is required"
            }))
        }
        Some(_) => return Err(place.error("metadata.name must be text")),
    };
    place.name = Some(name);
    let rbac = api_version.starts_with("rbac.authorization.k8s.io/");
    if rbac && !is_path_segment(name) {
        return Err(place.error(&format!(
            "metadata.name {} is not a valid name: at most 253 characters, without '/' or \
             '%', and not '.' or '..'",
            quote(name)
        )));
    }
    if !rbac && !is_dns_subdomain(name) {
        return Err(place.error(&format!(
            "metadata.name {} is not a valid name: lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit, at most 253 characters",
            quote(name)
        )));
    }
    let namespace = match metadata.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(ns)) if ns.is_empty() => None,
        Some(Value::String(ns)) if is_dns_label(ns) => Some(ns.clone()),
        Some(Value::String(ns)) => {
            return Err(place.error(&format!(
                "metadata.namespace {} is not a valid namespace: lower-case letters, digits \
                 and '-', starting and ending with a letter or digit, at most 63 characters",
                quote(ns)
            )))
        }
        Some(_) => return Err(place.error("metadata.namespace must be text")),
    };
    let object = ManifestObject {
        document,
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        namespace,
        object: Value::Null,
    };
    Ok(ManifestObject {
        object: Value::Object(fields),
        ..object
    })
}

/// A required, non-empty text field of the object.
fn text<'a>(fields: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match fields.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) | Some(Value::Null) | None => Err(format!("{key} is required")),
        Some(_) => Err(format!("{key} must be text")),
    }
}

/// `v1`, `apps/v1`, `example.com/v1beta1`: a version, after an optional group.
fn valid_api_version(s: &str) -> bool {
    let (group, version) = match s.split_once('/') {
        Some((g, v)) => (Some(g), v),
        None => (None, s),
    };
    let version_ok = version.starts_with(|c: char| c.is_ascii_lowercase())
        && version
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    version_ok && group.is_none_or(is_dns_subdomain)
}

/// A name as the RBAC kinds (roles, bindings) allow it, as Kubernetes checks it: any path
/// segment (`system:aggregate-to-edit`), at most 253 characters.
fn is_path_segment(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s != "." && s != ".." && !s.contains(['/', '%'])
}

fn quote(s: &str) -> String {
    format!("'{}'", clip(s))
}
