//! Applications: one version of an application deployed into a cluster, in a namespace of
//! its own so that several versions run side by side.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::refs::{
    label_value, ApplySet, ObjectRef, APPLICATION_LABEL, TENANT_LABEL, VERSION_LABEL,
};
use crate::cluster::string_enum;
use crate::ValidationError;

string_enum!(
    /// Where a version is.
    AppState {
        Deploying = "deploying",
        Deployed = "deployed",
        Failed = "failed",
        Deleting = "deleting",
    }
);

/// One version of an application in one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Application {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub cluster_id: Uuid,
    pub name: String,
    pub version: String,
    pub namespace: String,
    pub state: AppState,
    pub error: Option<String>,
    /// What its last deploy applied.
    pub objects: Vec<ObjectRef>,
    /// Whose rights it is applied with; None: KQueen's (an operator deployed it).
    pub user_id: Option<Uuid>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deployed_at: Option<DateTime<Utc>>,
}

impl Application {
    /// The version's ApplySet: a ConfigMap `kqueen-app-<name>` in its namespace, members
    /// labelled with the application, the version and the tenant.
    pub fn apply_set(&self, tenant_slug: &str) -> ApplySet {
        ApplySet::new(
            &format!("kqueen-app-{}", self.name),
            &self.namespace,
            [
                (APPLICATION_LABEL.to_owned(), label_value(&self.name)),
                (VERSION_LABEL.to_owned(), label_value(&self.version)),
                (TENANT_LABEL.to_owned(), label_value(tenant_slug)),
            ]
            .into(),
        )
    }
}

/// An application name: a DNS-1123 label of at most 40 characters (room for the version in
/// the default namespace name).
pub fn check_app_name(name: &str) -> Result<String, ValidationError> {
    if name.is_empty() {
        return Err(ValidationError::new("name", "is required"));
    }
    if name.len() > 40 || !is_label(name) {
        return Err(ValidationError::new(
            "name",
            "must be at most 40 lowercase letters, digits and '-', starting with a letter \
             and ending with a letter or digit",
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(ValidationError::new("name", "must start with a letter"));
    }
    Ok(name.to_owned())
}

/// A version: 1 to 40 letters, digits, '.', '_' or '-', starting and ending with a letter
/// or digit (`1.4.2`, `v2-beta`).
pub fn check_version(version: &str) -> Result<String, ValidationError> {
    let ok = !version.is_empty()
        && version.len() <= 40
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && version.starts_with(|c: char| c.is_ascii_alphanumeric())
        && version.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(version.to_owned())
    } else {
        Err(ValidationError::new(
            "version",
            "must be 1 to 40 letters, digits, '.', '_' or '-', starting and ending with a \
             letter or digit",
        ))
    }
}

/// The namespace of a version: the one asked for (checked), or `<name>-<version>` with the
/// version lowercased and '.'/'_' turned into '-'.
pub fn version_namespace(
    name: &str,
    version: &str,
    asked: Option<&str>,
) -> Result<String, ValidationError> {
    if let Some(ns) = asked.map(str::trim).filter(|s| !s.is_empty()) {
        if ns.len() > 63 || !is_label(ns) {
            return Err(ValidationError::new(
                "namespace",
                "must be at most 63 lowercase letters, digits and '-', starting and ending \
                 with a letter or digit",
            ));
        }
        if ns.starts_with(crate::kubernetes::SYSTEM_PREFIX)
            || ns == crate::kubernetes::USERS_NAMESPACE
            || ns == "default"
        {
            return Err(ValidationError::new(
                "namespace",
                format!("{ns} is not a namespace for applications"),
            ));
        }
        return Ok(ns.to_owned());
    }
    let v: String = version
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '.' || c == '_' { '-' } else { c })
        .collect();
    let ns = format!("{name}-{v}");
    if ns.len() > 63 || !is_label(&ns) {
        return Err(ValidationError::new(
            "namespace",
            format!("{ns} is not a valid namespace name; name one"),
        ));
    }
    Ok(ns)
}

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_get_their_own_namespace() {
        assert_eq!(
            version_namespace("shop", "1.2.0", None).unwrap(),
            "shop-1-2-0"
        );
        assert_eq!(
            version_namespace("shop", "V2_beta", None).unwrap(),
            "shop-v2-beta"
        );
        assert_eq!(
            version_namespace("shop", "1", Some(" staging ")).unwrap(),
            "staging"
        );
        for bad in ["kube-system", "kqueen-users", "default", "Shop", "-a"] {
            assert!(version_namespace("shop", "1", Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_and_versions_are_checked() {
        assert!(check_app_name("shop").is_ok());
        for bad in ["", "Shop", "1shop", "shop-", &"a".repeat(41), "a b"] {
            assert!(check_app_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_version("1.4.2").is_ok());
        for bad in ["", ".1", "1.", "a/b", &"1".repeat(41)] {
            assert!(check_version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_version_is_its_own_apply_set() {
        let mut app = Application {
            id: Uuid::nil(),
            tenant_id: Uuid::nil(),
            cluster_id: Uuid::nil(),
            name: "shop".into(),
            version: "1.0".into(),
            namespace: "shop-1-0".into(),
            state: AppState::Deploying,
            error: None,
            objects: vec![],
            user_id: None,
            requested_by: "ann".into(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            deployed_at: None,
        };
        let one = app.apply_set("acme");
        app.namespace = "shop-2-0".into();
        let two = app.apply_set("acme");
        assert_ne!(one.id, two.id);
        assert_eq!(one.labels[VERSION_LABEL], "1.0");
        assert_eq!(
            one.member_labels()[super::super::refs::PART_OF_LABEL],
            one.id
        );
    }
}
