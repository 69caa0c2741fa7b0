//! Kubernetes versions as KQueen meets them: a template's `1.33`, an API server's `v1.33.2`,
//! a provider's `1.33.2-gke.1` or `v1.33.2+k3s1`. Only the numbers before any `-` or `+` count.

use std::cmp::Ordering;

/// The numeric parts of a version (`v1.33.2-rc.1` → `[1, 33, 2]`); None when it does not start
/// with a number (after an optional `v`) or a part is not a number.
pub fn parts(version: &str) -> Option<Vec<u64>> {
    let v = version.trim();
    let v = v.strip_prefix(['v', 'V']).unwrap_or(v);
    let core = v.split(['-', '+']).next().unwrap_or_default();
    if core.is_empty() {
        return None;
    }
    core.split('.').map(|p| p.parse().ok()).collect()
}

/// The text an upgrade asks for, trimmed, when it has a version's shape (letters, digits,
/// `.`, `-`, `+`; at most 20): the one check of upgrades and rollouts.
pub fn shaped(text: &str) -> Option<&str> {
    let v = text.trim();
    let ok = !v.is_empty()
        && v.len() <= 20
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    ok.then_some(v)
}

/// What a version field says when [`shaped`] refuses it.
pub const SHAPE: &str = "must look like 1.34 or v1.34.2";

/// `version` against `target`, comparing as many parts as the shorter has: `1.33.2` is
/// `Equal` to a target `1.33` (it is at that version), `Less` than `1.34`. None when either
/// is not a version.
pub fn compare(version: &str, target: &str) -> Option<Ordering> {
    let (a, b) = (parts(version)?, parts(target)?);
    let n = a.len().min(b.len());
    Some(a[..n].cmp(&b[..n]))
}

/// Whether `version` is `prefix` or a patch of it (`1.20.2` matches `1.20`; `1.2` does not
/// match `1.20`).
pub fn matches(version: &str, prefix: &str) -> bool {
    match (parts(version), parts(prefix)) {
        (Some(a), Some(b)) => a.len() >= b.len() && a[..b.len()] == b[..],
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_their_numbers() {
        assert_eq!(parts("v1.33.2-gke.1"), Some(vec![1, 33, 2]));
        assert_eq!(parts("1.33.2+k3s1"), Some(vec![1, 33, 2]));
        assert_eq!(parts("latest"), None);
        assert_eq!(parts(""), None);
        assert_eq!(shaped(" v1.34.2+k3s1 "), Some("v1.34.2+k3s1"));
        assert_eq!(shaped("1.34 2"), None);
        assert_eq!(shaped(""), None);
        assert_eq!(shaped(&"1".repeat(21)), None);
        assert_eq!(compare("v1.20.2", "1.20"), Some(Ordering::Equal));
        assert_eq!(compare("1.20", "1.21"), Some(Ordering::Less));
        assert_eq!(compare("1.9", "1.10"), Some(Ordering::Less));
        assert_eq!(compare("1.22.1", "1.21"), Some(Ordering::Greater));
        assert_eq!(compare("x", "1.21"), None);
        assert!(matches("v1.20.2", "1.20"));
        assert!(matches("1.20", "v1.20"));
        assert!(!matches("1.2", "1.20"));
        assert!(!matches("1.20", "1.20.2"));
        assert!(!matches("1.21.0", "1.20"));
    }
}
