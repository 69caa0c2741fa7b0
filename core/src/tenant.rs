//! Tenants: the teams or organisations that own clusters.

use chrono::{DateTime, Utc};
use std::fmt;
use uuid::Uuid;

use crate::ValidationError;

/// A tenant's stable identifier in URLs, group mappings and namespaces: a DNS-1123 label
/// (1–63 characters of `a-z`, `0-9` and `-`, starting and ending with a letter or digit).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantSlug(String);

impl TenantSlug {
    pub const MAX_LEN: usize = 63;

    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let err = |m: &str| Err(ValidationError::new("slug", m));
        if raw.is_empty() {
            return err("must not be empty");
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
