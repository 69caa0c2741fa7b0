//! Tenants: the teams or organisations that own clusters.

use chrono::{DateTime, Utc};
use std::fmt;
use uuid::Uuid;

use crate::ValidationError;

/// A tenant's stable identifier in URLs, group mappings and namespaces: a DNS-1123 label
/// (1–63 characters of `a-z`, `0-9` and `-`, starting and ending with a letter or digit).
///
/// Names are taken exactly as given, here and in every name type built on it (cluster,
/// provider and template names) and in [`crate::identity::Username`]: surrounding spaces are
/// refused with their own message, never trimmed, so the API's documented `pattern` is the
/// whole rule and a name means the same in the portal, the API and the command line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantSlug(String);

impl TenantSlug {
    pub const MAX_LEN: usize = 63;

    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let err = |m: &str| Err(ValidationError::new("slug", m));
        if raw.trim().is_empty() {
            return err("must not be empty");
        }
        if let Some(m) = surrounding_space(raw) {
            return err(m);
        }
        if raw.len() > Self::MAX_LEN {
            return err("must be at most 63 characters");
        }
        if !raw
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return err("may contain only lowercase letters a-z, digits and '-'");
        }
        if raw.starts_with('-') || raw.ends_with('-') {
            return err("must start and end with a letter or digit");
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The message for a name with spaces (or other blanks) before or after it, if it has any.
pub(crate) fn surrounding_space(raw: &str) -> Option<&'static str> {
    let blank = |c: Option<char>| c.is_some_and(char::is_whitespace);
    (blank(raw.chars().next()) || blank(raw.chars().next_back()))
        .then_some("must not start or end with a space")
}

impl fmt::Display for TenantSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A human-readable name: 1–100 characters after trimming, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub const MAX_CHARS: usize = 100;

    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(ValidationError::new("display_name", "must not be empty"));
        }
        if trimmed.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new(
                "display_name",
                "must be at most 100 characters",
            ));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(ValidationError::new(
                "display_name",
                "must not contain control characters",
            ));
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A tenant as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: Uuid,
    pub slug: TenantSlug,
    pub display_name: DisplayName,
    pub created_at: DateTime<Utc>,
}

/// What a caller supplies to create a tenant, before validation.
#[derive(Debug, Clone, Default)]
pub struct NewTenant {
    pub slug: String,
    /// Defaults to the slug when absent or blank.
    pub display_name: Option<String>,
}

/// Filter of the tenant list: a case-insensitive substring of slug or display name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantFilter {
    pub contains: Option<String>,
}

impl TenantFilter {
    /// A filter from a search box: blank means no filter; at most 100 characters are used.
    pub fn from_query(q: Option<&str>) -> Self {
        let contains = q
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(100).collect::<String>());
        Self { contains }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_accepts_dns_labels() {
        for ok in ["a", "team-a", "t0", "0t", &"x".repeat(63)] {
            assert_eq!(
                TenantSlug::parse(ok).map(|s| s.to_string()).as_deref(),
                Ok(ok)
            );
        }
    }

    #[test]
    fn slug_rejects_everything_else() {
        for bad in [
            "",
            "-a",
            "a-",
            "Team",
            "team_a",
            "tëam",
            "a.b",
            "a b",
            &"x".repeat(64),
        ] {
            let e = TenantSlug::parse(bad).expect_err(bad);
            assert_eq!(e.field, "slug");
        }
    }

    #[test]
    fn slug_refuses_surrounding_spaces_in_words() {
        for bad in [" team-a", "team-a ", "\tteam-a", "team-a\n", "\u{a0}team-a"] {
            let e = TenantSlug::parse(bad).expect_err(bad);
            assert_eq!(e.message, "must not start or end with a space", "{bad:?}");
        }
        for blank in [" ", "\t\n"] {
            let e = TenantSlug::parse(blank).expect_err(blank);
            assert_eq!(e.message, "must not be empty");
        }
    }

    #[test]
    fn display_name_is_trimmed_and_bounded() {
        assert_eq!(
            DisplayName::parse("  Team A ").map(|d| d.0),
            Ok("Team A".into())
        );
        assert!(DisplayName::parse("   ").is_err());
        assert!(DisplayName::parse("a\u{7}b").is_err());
        assert!(DisplayName::parse(&"é".repeat(100)).is_ok());
        assert!(DisplayName::parse(&"é".repeat(101)).is_err());
    }

    #[test]
    fn filter_from_query() {
        assert_eq!(TenantFilter::from_query(None).contains, None);
        assert_eq!(TenantFilter::from_query(Some("  ")).contains, None);
        assert_eq!(
            TenantFilter::from_query(Some(" tea ")).contains.as_deref(),
            Some("tea")
        );
        assert_eq!(
            TenantFilter::from_query(Some(&"q".repeat(300)))
                .contains
                .map(|s| s.len()),
            Some(100)
        );
    }
}
