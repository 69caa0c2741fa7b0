//! Logins (identity provider and local break-glass accounts), identities, local users.

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::access_sweep::AccessSweep;
use super::guard::Guard;
use super::identity_cache::IdentityCache;
use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent, Outcome};
use crate::deps::Deps;
use crate::identity::GroupMap;
use crate::identity::{Identity, Username};
use crate::policy::Permission;
use crate::secret;
use crate::tenant::{NewTenant, TenantSlug};
use crate::user::User;
use crate::{Actor, Error, Result};
use std::sync::Arc;

/// What the identity provider says about a user after a verified login.
#[derive(Debug, Clone, Default)]
pub struct ExternalLogin {
    pub issuer: String,
    pub subject: String,
    pub preferred_username: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    pub groups: Vec<String>,
}

impl ExternalLogin {
    /// `preferred_username`, else the e-mail address, when valid as a username; else a stable
    /// name derived from the subject.
    fn username(&self) -> String {
        [self.preferred_username.as_deref(), self.email.as_deref()]
            .into_iter()
            .flatten()
            .find_map(|u| Username::parse(u).ok())
            .map(|u| u.as_str().to_owned())
            .unwrap_or_else(|| {
                let digest = Sha256::digest(format!("{}#{}", self.issuer, self.subject));
                let short: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                format!("user-{short}")
            })
    }
}

/// Sign-in (identity provider and local accounts), identities, local users.
#[derive(Clone)]
pub struct Auth {
    deps: Deps,
    guard: Guard,
    tenancy: Tenancy,
    sweep: AccessSweep,
    group_map: Arc<GroupMap>,
    identities: Arc<IdentityCache>,
}

impl Auth {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        tenancy: &Tenancy,
        sweep: &AccessSweep,
        group_map: Arc<GroupMap>,
        identities: Arc<IdentityCache>,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            tenancy: tenancy.clone(),
            sweep: sweep.clone(),
            group_map,
            identities,
        }
    }
}

impl Auth {
    /// Signs in a user verified by the identity provider: creates or updates the user, and
    /// recomputes their provider-derived tenants and operator flag from their groups (so that
    /// leaving a group removes the access at the next login). Mapped tenants that do not exist
    /// yet are created.
    #[tracing::instrument(skip_all, fields(subject = %login.subject))]
    pub async fn login_external(
        &self,
        login: &ExternalLogin,
        source_ip: Option<String>,
    ) -> Result<Identity> {
        let subject = format!("{}#{}", login.issuer, login.subject);
        let username = login.username();
        let (grants, is_operator) = self.group_map.resolve(&login.groups);
        let mut memberships = Vec::with_capacity(grants.len());
        for (slug, role) in grants {
            memberships.push((self.tenant_for_mapping(&slug).await?, role));
        }
        let now = crate::clock::now();
        let mut existing = self.deps.store.user_by_subject(&subject).await?;
        // Added to a tenant by username before this first login: the account becomes theirs.
        if existing.is_none()
            && self
                .deps
                .store
                .claim_pending_user(&username, &subject)
                .await?
        {
            existing = self.deps.store.user_by_subject(&subject).await?;
        }
        let user = User {
            id: existing.as_ref().map_or_else(Uuid::now_v7, |u| u.id),
            subject,
            username,
            email: login.email.clone(),
            display_name: login.name.clone(),
            is_operator,
            disabled: existing.as_ref().is_some_and(|u| u.disabled),
            created_at: existing.as_ref().map_or(now, |u| u.created_at),
            last_login_at: Some(now),
        };
        let actor = Actor::anonymous().with_source_ip(source_ip.clone());
        if user.disabled {
            return Err(self
                .login_refused(&actor, user.username.as_str(), "account disabled")
                .await);
        }
        let groups = login.groups.join(" ");
        let detail = format!(
            "single sign-on; groups: {}",
            groups.chars().take(200).collect::<String>()
        );
        let mut audit =
            AuditEvent::success(&actor, action::LOGIN, &user.username).with_detail(detail);
        audit.actor = user.username.clone();
        let upserted = self
            .deps
            .store
            .upsert_external_login(&user, &memberships, &audit)
            .await;
        // The identity provider's groups may have changed this user's memberships (and with
        // them, which of their ServiceAccounts in clusters are still due).
        self.identities.clear();
        if upserted.is_ok() {
            self.sweep.sweep_access_soon();
        }
        if let Err(e) = upserted {
            if e.is_client_error() {
                self.guard
                    .audit_refusal(&actor, action::LOGIN, &user.username, None, &e)
                    .await?;
            }
            return Err(e);
        }
        self.identity(user.id).await?.ok_or(Error::Unauthenticated)
    }

    async fn tenant_for_mapping(&self, slug: &TenantSlug) -> Result<Uuid> {
        match self.deps.store.tenant_by_slug(slug).await {
            Ok(t) => Ok(t.id),
            Err(Error::NotFound(_)) => {
                let input = NewTenant {
                    slug: slug.to_string(),
                    display_name: None,
                };
                match self.tenancy.create_tenant(&Actor::system(), input).await {
                    Ok(t) => Ok(t.id),
                    // Created meanwhile by a concurrent login.
                    Err(Error::Conflict(_)) => Ok(self.deps.store.tenant_by_slug(slug).await?.id),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Signs in a local (break-glass) account. Unknown user, wrong password and disabled
    /// account give the same answer, and are audited as failed logins.
    pub async fn login_local(
        &self,
        username: &str,
        password: &str,
        source_ip: Option<String>,
    ) -> Result<Identity> {
        let actor = Actor::anonymous().with_source_ip(source_ip);
        let user = self.deps.store.user_by_username(username).await?;
        let hash = match &user {
            Some(u) => self.deps.store.password_hash(u.id).await?,
            None => None,
        };
        let ok = match (&user, &hash) {
            (Some(u), Some(h)) => !u.disabled && secret::verify_password(password, h),
            _ => false,
        };
        let Some(user) = user.filter(|_| ok) else {
            return Err(self
                .login_refused(&actor, username, "invalid username or password")
                .await);
        };
        let now = crate::clock::now();
        let mut audit =
            AuditEvent::success(&actor, action::LOGIN, &user.username).with_detail("local account");
        audit.actor = user.username.clone();
        self.deps.store.record_login(user.id, now, &audit).await?;
        self.identity(user.id).await?.ok_or(Error::Unauthenticated)
    }

    /// Records a failed login (also used by the web layer for failed single sign-on attempts)
    /// and returns the error to answer with.
    pub async fn login_refused(&self, actor: &Actor, target: &str, reason: &str) -> Error {
        let target: String = target.chars().take(100).collect();
        let event =
            AuditEvent::now(actor, action::LOGIN, target, Outcome::Failure).with_detail(reason);
        if let Err(e) = self.deps.store.record_audit(&event).await {
            return e;
        }
        Error::Unauthenticated
    }

    /// Records a logout.
    pub async fn logout(&self, actor: &Actor) -> Result<()> {
        let event = AuditEvent::success(actor, action::LOGOUT, actor.to_string());
        self.deps.store.record_audit(&event).await
    }

    /// The current identity of a user, or `None` when the user is gone or disabled (their
    /// sessions and tokens then stop working).
    pub async fn identity(&self, user_id: Uuid) -> Result<Option<Identity>> {
        if let Some(cached) = self.identities.get(&user_id) {
            return Ok(cached);
        }
        let user = match self.deps.store.user_by_id(user_id).await {
            Ok(u) if !u.disabled => u,
            Ok(_) | Err(Error::NotFound(_)) => {
                self.identities.put(user_id, None);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let memberships = self.deps.store.memberships_of(user.id).await?;
        let identity = Identity {
            user_id: user.id,
            username: user.username,
            email: user.email,
            display_name: user.display_name,
            is_operator: user.is_operator,
            memberships,
        };
        self.identities.put(user_id, Some(identity.clone()));
        Ok(Some(identity))
    }

    /// Creates a local account with a password (break-glass access). Operators and the
    /// command line only.
    pub async fn create_local_user(
        &self,
        actor: &Actor,
        username: &str,
        password: &str,
        operator: bool,
    ) -> Result<User> {
        self.guard
            .authorize(
                actor,
                Permission::ManageUsers,
                action::USER_CREATE,
                username,
                None,
            )
            .await?;
        let name = match Username::parse(username) {
            Ok(n) => n,
            Err(e) => {
                let e = Error::Invalid(e);
                self.guard
                    .audit_refusal(actor, action::USER_CREATE, username, None, &e)
                    .await?;
                return Err(e);
            }
        };
        let hash = secret::hash_password(password)?;
        let user = User {
            id: Uuid::now_v7(),
            subject: format!("local:{}", name.as_str()),
            username: name.as_str().to_owned(),
            email: None,
            display_name: None,
            is_operator: operator,
            disabled: false,
            created_at: crate::clock::now(),
            last_login_at: None,
        };
        let role = if operator { "operator" } else { "user" };
        let audit = AuditEvent::success(actor, action::USER_CREATE, &user.username)
            .with_detail(format!("local {role}"));
        if let Err(e) = self
            .deps
            .store
            .create_user(&user, Some(&hash), &audit)
            .await
        {
            if e.is_client_error() {
                self.guard
                    .audit_refusal(actor, action::USER_CREATE, username, None, &e)
                    .await?;
            }
            return Err(e);
        }
        Ok(user)
    }

    /// True when no operator can log in yet (to offer a bootstrap account at first start).
    pub async fn needs_bootstrap(&self) -> Result<bool> {
        Ok(!self.deps.store.has_active_operator().await?)
    }
}
