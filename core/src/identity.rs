//! Users as the portal knows them after login: their tenants and roles, and the mapping from
//! identity-provider groups to tenants and roles.

use std::fmt;
use uuid::Uuid;

use crate::tenant::TenantSlug;
use crate::ValidationError;

/// A role inside one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Member,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s {
            "member" => Ok(Role::Member),
            "admin" => Ok(Role::Admin),
            _ => Err(ValidationError::new("role", "must be 'member' or 'admin'")),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a membership comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MembershipSource {
    /// Derived from the identity provider's groups; recomputed at every login.
    Oidc,
    /// Granted in the portal by an operator or tenant admin.
    Manual,
}

impl MembershipSource {
    pub fn as_str(self) -> &'static str {
        match self {
            MembershipSource::Oidc => "oidc",
            MembershipSource::Manual => "manual",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "oidc" => Some(MembershipSource::Oidc),
            "manual" => Some(MembershipSource::Manual),
            _ => None,
        }
    }
}

/// One tenant a user belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub tenant_id: Uuid,
    pub tenant_slug: TenantSlug,
    pub role: Role,
    pub source: MembershipSource,
}

/// One member of a tenant, as listed for its admins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub user_id: Uuid,
    pub username: String,
    pub email: Option<String>,
    pub role: Role,
    pub source: MembershipSource,
}

/// A logged-in user with everything authorization needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user_id: Uuid,
    pub username: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub is_operator: bool,
    pub memberships: Vec<Membership>,
}

impl Identity {
    /// The user's role in a tenant, if a member.
    pub fn role_in(&self, tenant_id: Uuid) -> Option<Role> {
        self.memberships
            .iter()
            .find(|m| m.tenant_id == tenant_id)
            .map(|m| m.role)
    }

    /// The memberships where the user is an admin.
    pub fn admin_memberships(&self) -> impl Iterator<Item = &Membership> + '_ {
        self.memberships.iter().filter(|m| m.role == Role::Admin)
    }

    /// Tenants where the user is an admin.
    pub fn admin_tenants(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.admin_memberships().map(|m| m.tenant_id)
    }
}

/// A username: 1–64 of `A-Z a-z 0-9 . _ @ + -`, not one of the names the audit trail uses
/// for non-users (`system`, `anonymous`, `cli`). Taken exactly as given: surrounding spaces
/// are refused, not trimmed (as every name, see [`crate::tenant::TenantSlug`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let err = |m: &str| Err(ValidationError::new("username", m));
        if let Some(m) = crate::tenant::surrounding_space(raw).filter(|_| !raw.trim().is_empty()) {
            return err(m);
        }
        if raw.is_empty() || raw.len() > 64 {
            return err("must be 1 to 64 characters");
        }
        if !raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._@+-".contains(c))
        {
            return err("may contain only letters, digits and . _ @ + -");
        }
        if ["system", "anonymous", "cli"].contains(&raw.to_ascii_lowercase().as_str()) {
            return err("is reserved");
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What one identity-provider group grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    Tenant { slug: TenantSlug, role: Role },
    Operator,
}

/// Mapping from identity-provider groups to tenants and roles, from configuration:
/// `group=tenant:role` entries separated by commas, where role is `member` or `admin`, and
/// `group=*:operator` makes members of the group operators. Example:
/// `team-a=team-a:member,team-a-leads=team-a:admin,kaas-admins=*:operator`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupMap {
    entries: Vec<(String, Grant)>,
}

impl GroupMap {
    pub fn parse(spec: &str) -> Result<Self, ValidationError> {
        let mut entries = Vec::new();
        for raw in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let err = |m: &str| ValidationError::new("group_map", format!("'{raw}': {m}"));
            let (group, grant) = raw
                .split_once('=')
                .ok_or_else(|| err("expected group=tenant:role"))?;
            let (tenant, role) = grant
                .split_once(':')
                .ok_or_else(|| err("expected tenant:role"))?;
            let (group, tenant, role) = (group.trim(), tenant.trim(), role.trim());
            if group.is_empty() {
                return Err(err("group name is empty"));
            }
            let grant = match (tenant, role) {
                ("*", "operator") => Grant::Operator,
                ("*", _) => return Err(err("'*' goes only with the role 'operator'")),
                (_, "operator") => return Err(err("'operator' goes only with the tenant '*'")),
                (slug, role) => Grant::Tenant {
                    slug: TenantSlug::parse(slug).map_err(|e| err(&e.to_string()))?,
                    role: Role::parse(role).map_err(|e| err(&e.message))?,
                },
            };
            entries.push((group.to_owned(), grant));
        }
        Ok(Self { entries })
    }

    /// What a user with these groups gets: tenant roles (the highest per tenant) and whether
    /// the user is an operator.
    pub fn resolve(&self, groups: &[String]) -> (Vec<(TenantSlug, Role)>, bool) {
        let mut tenants: Vec<(TenantSlug, Role)> = Vec::new();
        let mut operator = false;
        for (group, grant) in &self.entries {
            if !groups.iter().any(|g| g == group) {
                continue;
            }
            match grant {
                Grant::Operator => operator = true,
                Grant::Tenant { slug, role } => match tenants.iter_mut().find(|(s, _)| s == slug) {
                    Some((_, r)) => *r = (*r).max(*role),
                    None => tenants.push((slug.clone(), *role)),
                },
            }
        }
        tenants.sort();
        (tenants, operator)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(g: &[&str]) -> Vec<String> {
        g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn group_map_parses_and_resolves() {
        let map = GroupMap::parse(
            " team-a=team-a:member, team-a-leads = team-a:admin ,kaas-admins=*:operator,,x=team-b:member",
        )
        .expect("valid");
        let (tenants, op) = map.resolve(&groups(&["team-a", "team-a-leads", "other"]));
        assert_eq!(
            tenants,
            [(TenantSlug::parse("team-a").expect("slug"), Role::Admin)]
        );
        assert!(!op);
        let (tenants, op) = map.resolve(&groups(&["kaas-admins"]));
        assert!(tenants.is_empty() && op);
        assert_eq!(map.resolve(&[]), (vec![], false));
        assert!(GroupMap::parse("").expect("empty is fine").is_empty());
    }

    #[test]
    fn group_map_rejects_malformed_entries() {
        for bad in [
            "team-a",
            "team-a=team-a",
            "=t:member",
            "g=*:member",
            "g=t:operator",
            "g=T A:member",
            "g=t:owner",
        ] {
            let e = GroupMap::parse(bad).expect_err(bad);
            assert_eq!(e.field, "group_map");
            assert!(
                e.message.contains(bad.split(',').next().unwrap_or(bad)),
                "{e}"
            );
        }
    }

    #[test]
    fn usernames() {
        assert!(Username::parse("alice.o'neil").is_err());
        assert!(Username::parse("alice@example.test").is_ok());
        assert!(Username::parse("System").is_err());
        assert!(Username::parse("").is_err());
        assert!(Username::parse(&"a".repeat(65)).is_err());
        for bad in [" alice", "alice ", "alice\n"] {
            let e = Username::parse(bad).expect_err(bad);
            assert_eq!(e.message, "must not start or end with a space");
        }
    }
}
