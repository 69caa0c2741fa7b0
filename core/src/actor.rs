//! Who performs an action. Every use case takes one; the policy decides with it, and the audit
//! trail records it with the address the request came from.

use std::fmt;

use crate::identity::Identity;

/// The kinds of acting identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The portal itself (start-up, background work). Trusted.
    System,
    /// A person at the server's command line (`kqueen tenant create …`). Trusted: whoever can
    /// run the binary with its configuration can read the database anyway. `os_user` is the
    /// login name of the process owner when known.
    Cli { os_user: Option<String> },
    /// A visitor who has not logged in.
    Anonymous,
    /// A logged-in user (session or API token).
    User(Identity),
}

/// The acting identity of a use case and where the request came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub principal: Principal,
    pub source_ip: Option<String>,
}

impl Actor {
    pub fn system() -> Self {
        Self {
            principal: Principal::System,
            source_ip: None,
        }
    }

    pub fn cli(os_user: Option<String>) -> Self {
        Self {
            principal: Principal::Cli { os_user },
            source_ip: None,
        }
    }

    pub fn anonymous() -> Self {
        Self {
            principal: Principal::Anonymous,
            source_ip: None,
        }
    }

    pub fn user(identity: Identity) -> Self {
        Self {
            principal: Principal::User(identity),
            source_ip: None,
        }
    }

    pub fn with_source_ip(mut self, ip: Option<String>) -> Self {
        self.source_ip = ip;
        self
    }

    /// The logged-in user, if any.
    pub fn identity(&self) -> Option<&Identity> {
        match &self.principal {
            Principal::User(i) => Some(i),
            _ => None,
        }
    }

    /// System and command line: trusted callers that bypass tenant and role checks.
    pub fn is_trusted(&self) -> bool {
        matches!(self.principal, Principal::System | Principal::Cli { .. })
    }
}

impl fmt::Display for Actor {
    /// The name the audit trail records: the username for users.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.principal {
            Principal::System => f.write_str("system"),
            Principal::Cli { os_user: Some(u) } => write!(f, "cli:{u}"),
            Principal::Cli { os_user: None } => f.write_str("cli"),
            Principal::Anonymous => f.write_str("anonymous"),
            Principal::User(i) => f.write_str(&i.username),
        }
    }
}
