//! Personal API tokens: created and revoked by their owner, shown once, stored hashed.

use chrono::Duration;
use uuid::Uuid;

use super::auth::{Auth, ExternalLogin};
use super::guard::Guard;
use super::identity_cache::TokenCache;
use crate::audit::{action, AuditEvent};
use crate::deps::Deps;
use crate::identity::Identity;
use crate::policy::Permission;
use crate::secret::{self, TOKEN_PREFIX};
use crate::token::{ApiToken, IssuedToken};
use crate::{Actor, Error, Result, ValidationError};
use std::sync::Arc;

/// Longest token lifetime.
pub const MAX_TOKEN_DAYS: u32 = 365;

/// A token's name, trimmed, when it and the lifetime are acceptable.
fn checked_token_input(name: &str, days: u32) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ValidationError::new("name", "must be 1 to 100 printable characters").into());
    }
    if !(1..=MAX_TOKEN_DAYS).contains(&days) {
        return Err(ValidationError::new("days", "must be between 1 and 365").into());
    }
    Ok(name)
}

/// API tokens: create, list, revoke, and authenticate a bearer.
#[derive(Clone)]
pub struct Tokens {
    deps: Deps,
    guard: Guard,
    auth: Auth,
    cache: Arc<TokenCache>,
}

impl Tokens {
    pub(super) fn new(deps: &Deps, guard: &Guard, auth: &Auth, cache: Arc<TokenCache>) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            auth: auth.clone(),
            cache,
        }
    }
}

impl Tokens {
    /// Issues a token for the acting user, valid for `days` days (1 to 365).
    pub async fn create_token(&self, actor: &Actor, name: &str, days: u32) -> Result<IssuedToken> {
        self.guard
            .authorize(
                actor,
                Permission::SelfService,
                action::TOKEN_CREATE,
                name,
                None,
            )
            .await?;
        let owner = actor.identity().ok_or(Error::Unauthenticated)?;
        let name = checked_token_input(name, days)?;
        let secret = secret::random_secret(TOKEN_PREFIX);
        let now = crate::clock::now();
        let token = ApiToken {
            id: Uuid::now_v7(),
            user_id: owner.user_id,
            name: name.to_owned(),
            prefix: secret.chars().take(TOKEN_PREFIX.len() + 6).collect(),
            created_at: now,
            expires_at: now + Duration::days(i64::from(days)),
            last_used_at: None,
            revoked_at: None,
        };
        let audit = AuditEvent::success(actor, action::TOKEN_CREATE, &token.prefix)
            .with_detail(format!("'{}', {days} days", token.name));
        self.deps
            .store
            .create_token(&token, &secret::token_hash(&secret), &audit)
            .await?;
        Ok(IssuedToken { token, secret })
    }

    /// Signs in a user the identity provider verified for a device login (`kqueen login` on
    /// a terminal: the provider's device flow, RFC 8628) and issues them a personal token
    /// named `name`, valid `days` days. The input is checked before anyone is signed in; the
    /// login and the token are audited as any other.
    pub async fn sign_in_for_token(
        &self,
        login: &ExternalLogin,
        name: &str,
        days: u32,
        source_ip: Option<String>,
    ) -> Result<(Identity, IssuedToken)> {
        checked_token_input(name, days)?;
        let identity = self.auth.login_external(login, source_ip.clone()).await?;
        let actor = Actor::user(identity.clone()).with_source_ip(source_ip);
        let issued = self.create_token(&actor, name, days).await?;
        Ok((identity, issued))
    }

    /// Whether a token named `name` and valid `days` days could be issued (what
    /// [`Self::create_token`] checks), for callers that spend something before issuing one.
    pub fn check_input(&self, name: &str, days: u32) -> Result<()> {
        checked_token_input(name, days).map(|_| ())
    }

    /// The acting user's tokens, newest first.
    pub async fn list(&self, actor: &Actor) -> Result<Vec<ApiToken>> {
        self.guard
            .authorize(
                actor,
                Permission::SelfService,
                action::TOKEN_LIST,
                "tokens",
                None,
            )
            .await?;
        let owner = actor.identity().ok_or(Error::Unauthenticated)?;
        self.deps.store.tokens_of(owner.user_id).await
    }

    /// Revokes one of the acting user's tokens; other users' tokens are "not found".
    pub async fn revoke_token(&self, actor: &Actor, id: Uuid) -> Result<()> {
        let target = id.to_string();
        self.guard
            .authorize(
                actor,
                Permission::SelfService,
                action::TOKEN_REVOKE,
                &target,
                None,
            )
            .await?;
        let owner = actor.identity().ok_or(Error::Unauthenticated)?;
        let audit = AuditEvent::success(actor, action::TOKEN_REVOKE, &target);
        if self
            .deps
            .store
            .revoke_token(owner.user_id, id, crate::clock::now(), &audit)
            .await?
        {
            self.cache.clear();
            Ok(())
        } else {
            let e = Error::NotFound("token");
            self.guard
                .audit_refusal(actor, action::TOKEN_REVOKE, &target, None, &e)
                .await?;
            Err(e)
        }
    }

    /// The identity behind a bearer token, or `None` for unknown, revoked or expired tokens
    /// and disabled users.
    pub async fn authenticate_token(&self, secret: &str) -> Result<Option<Identity>> {
        if !secret.starts_with(TOKEN_PREFIX) || secret.len() > 200 {
            return Ok(None);
        }
        let now = crate::clock::now();
        let hash = secret::token_hash(secret);
        let mut token = match self.cache.get(&hash) {
            Some(t) => t,
            None => match self.deps.store.token_by_hash(&hash).await? {
                Some(t) => {
                    self.cache.put(hash.clone(), t.clone());
                    t
                }
                None => return Ok(None),
            },
        };
        if !token.is_active(now) {
            return Ok(None);
        }
        // "Last used" is shown to the minute: record it at most once a minute, not as a
        // database write on every API request.
        if token
            .last_used_at
            .is_none_or(|t| now - t >= chrono::Duration::minutes(1))
        {
            self.deps.store.touch_token(token.id, now).await?;
            token.last_used_at = Some(now);
            self.cache.update(&hash, token.clone());
        }
        self.auth.identity(token.user_id).await
    }
}
