//! What the overview server functions send to the browser: The overview page.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverviewDto {
    /// Installation-wide counts, for operators only.
    pub tenants: Option<u64>,
    pub users: Option<u64>,
    pub audit_events: Option<u64>,
    /// `sqlite` or `postgres` (operators only).
    pub database: Option<String>,
    pub operator: bool,
    /// What is set up, for the operators' first-run checklist (None for everyone else).
    pub setup: Option<SetupDto>,
}

/// What the installation has, as the first-run checklist counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupDto {
    pub tenants: u64,
    pub providers: u64,
    pub templates: u64,
    pub users: u64,
    pub memberships: u64,
}

/// One step of the first-run checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// `tenant`, `provider`, `template`, `people` (the `data-step` of its row).
    pub key: &'static str,
    pub title: &'static str,
    pub why: &'static str,
    pub href: &'static str,
    pub link: &'static str,
    pub done: bool,
}

impl SetupDto {
    /// The checklist, in the order the steps build on each other.
    pub fn steps(&self) -> Vec<Step> {
        vec![
            Step {
                key: "tenant",
                title: "Create a tenant",
                why: "A tenant is a team: its members request and use clusters, within its quota.",
                href: "/admin",
                link: "Admin",
                done: self.tenants > 0,
            },
            Step {
                key: "provider",
                title: "Register a provider",
                why: "The provisioner that builds clusters (import, an installer command, Jenkins, hosted control planes) with its credentials.",
                href: "/providers#provider-form-heading",
                link: "Providers",
                done: self.providers > 0,
            },
            Step {
                key: "template",
                title: "Create a template",
                why: "What tenants may request from a provider: the parameters they choose and their limits.",
                href: "/providers#template-form-heading",
                link: "Templates",
                done: self.templates > 0,
            },
            Step {
                key: "people",
                title: "Invite people and add them to a tenant",
                why: "Create local accounts with a set-password link (or let people sign in with single sign-on), then add them to a tenant on its page.",
                href: "/admin/users",
                link: "Users",
                done: self.memberships > 0,
            },
        ]
    }

    /// Every step is done: the checklist is no longer shown.
    pub fn complete(&self) -> bool {
        self.steps().iter().all(|s| s.done)
    }
}

#[cfg(test)]
mod tests {
    use super::SetupDto;

    #[test]
    fn the_checklist_follows_the_counts() {
        let mut s = SetupDto {
            tenants: 0,
            providers: 0,
            templates: 0,
            users: 1,
            memberships: 0,
        };
        assert!(s.steps().iter().all(|s| !s.done));
        assert!(!s.complete());
        s.tenants = 1;
        s.providers = 2;
        s.templates = 1;
        let done: Vec<_> = s.steps().iter().map(|s| s.done).collect();
        assert_eq!(done, [true, true, true, false]);
        s.memberships = 3;
        assert!(s.complete());
    }
}
