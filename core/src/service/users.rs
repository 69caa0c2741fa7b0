//! Users as operators manage them in the portal and the API: the user list, local accounts
//! created with a password or invited with a one-time set-password link, the acceptance of
//! such a link, and the first-run figures.

use chrono::Duration;
use uuid::Uuid;

use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::deps::Deps;
use crate::identity::Username;
use crate::invite::{
    Invite, IssuedInvite, NewUser, SetupCounts, UserSummary, INVITE_DAYS, INVITE_PREFIX,
};
use crate::policy::{self, Permission};
use crate::secret;
use crate::user::User;
use crate::{Actor, Error, Result, ValidationError};

/// The most users the list shows.
pub const MAX_LISTED_USERS: u32 = 1000;

/// Users: list, create, invite; invitations accepted.
#[derive(Clone)]
pub struct Users {
    deps: Deps,
    guard: Guard,
}

impl Users {
    pub(super) fn new(deps: &Deps, guard: &Guard) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
        }
    }
}

/// A display name or e-mail address: trimmed, empty is none, at most `max` characters and no
/// control characters.
fn optional_text(
    field: &'static str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, ValidationError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(ValidationError::new(
            field,
            format!("must be at most {max} printable characters"),
        ));
    }
    Ok(Some(v.to_owned()))
}

/// The user an operator asked for, checked: username, display name, e-mail.
fn parse_new_user(input: &NewUser) -> Result<User, ValidationError> {
    let name = Username::parse(&input.username)?;
    let display_name = optional_text("display_name", input.display_name.as_deref(), 100)?;
    let email = optional_text("email", input.email.as_deref(), 254)?;
    if let Some(e) = &email {
        let parts = e.split_once('@');
        if parts.is_none_or(|(l, d)| l.is_empty() || d.is_empty())
            || e.contains(char::is_whitespace)
        {
            return Err(ValidationError::new("email", "must be an e-mail address"));
        }
    }
    Ok(User {
        id: Uuid::now_v7(),
        subject: format!("local:{}", name.as_str()),
        username: name.as_str().to_owned(),
        email,
        display_name,
        is_operator: input.operator,
        disabled: false,
        created_at: crate::clock::now(),
        last_login_at: None,
    })
}

fn kind(user: &User) -> &'static str {
    if user.is_operator {
        "local operator"
    } else {
        "local user"
    }
}

impl Users {
    /// Every user with their tenants, local or single sign-on, and open invitation (operators).
    pub async fn list(&self, actor: &Actor) -> Result<Vec<UserSummary>> {
        self.guard
            .authorize(
                actor,
                Permission::ManageUsers,
                action::USER_LIST,
                "users",
                None,
            )
            .await?;
        self.deps
            .store
            .user_directory(crate::clock::now(), MAX_LISTED_USERS)
            .await
    }

    /// Creates a local account with a password chosen by the operator (operators only).
    pub async fn create_with_password(
        &self,
        actor: &Actor,
        input: &NewUser,
        password: &str,
    ) -> Result<User> {
        let target = input.username.as_str();
        self.guard
            .authorize(
                actor,
                Permission::ManageUsers,
                action::USER_CREATE,
                target,
                None,
            )
            .await?;
        let checked = parse_new_user(input)
            .map_err(Error::from)
            .and_then(|user| Ok((secret::hash_password(password)?, user)));
        let (hash, user) = self
            .guard
            .audited(actor, action::USER_CREATE, target, None, checked)
            .await?;
        let audit = AuditEvent::success(actor, action::USER_CREATE, &user.username)
            .with_detail(format!("{}, password set by the operator", kind(&user)));
        let stored = self
            .deps
            .store
            .create_user(&user, Some(&hash), &audit)
            .await;
        self.guard
            .audited(actor, action::USER_CREATE, target, None, stored)
            .await?;
        Ok(user)
    }

    /// Creates a local account without a password and an invitation: a link, valid for
    /// [`INVITE_DAYS`] days and once, with which the person sets their own password
    /// (operators only). The link's secret is in the answer only.
    pub async fn invite(&self, actor: &Actor, input: &NewUser) -> Result<IssuedInvite> {
        let target = input.username.as_str();
        self.guard
            .authorize(
                actor,
                Permission::ManageUsers,
                action::USER_CREATE,
                target,
                None,
            )
            .await?;
        let user = self
            .guard
            .audited(
                actor,
                action::USER_CREATE,
                target,
                None,
                parse_new_user(input).map_err(Error::from),
            )
            .await?;
        let (invite, secret) = new_invite(actor, user.id);
        let audit =
            AuditEvent::success(actor, action::USER_CREATE, &user.username).with_detail(format!(
                "{}, invited (link valid until {})",
                kind(&user),
                invite.expires_at.format("%Y-%m-%d %H:%M UTC")
            ));
        let stored = self
            .deps
            .store
            .create_invited_user(&user, &invite, &secret::token_hash(&secret), &audit)
            .await;
        self.guard
            .audited(actor, action::USER_CREATE, target, None, stored)
            .await?;
        Ok(IssuedInvite {
            invite,
            user,
            secret,
        })
    }

    /// A new invitation link for a local account that has no password yet (the first link
    /// expired or was lost); earlier links stop working. Accounts with a password, and those
    /// of the identity provider, are refused: a link must never take over an account someone
    /// already uses.
    pub async fn reinvite(&self, actor: &Actor, username: &str) -> Result<IssuedInvite> {
        self.guard
            .authorize(
                actor,
                Permission::ManageUsers,
                action::USER_INVITE,
                username,
                None,
            )
            .await?;
        let found = match self.deps.store.user_by_username(username).await? {
            Some(u) => Ok(u),
            None => Err(Error::NotFound("user")),
        };
        let user = self
            .guard
            .audited(actor, action::USER_INVITE, username, None, found)
            .await?;
        let invitable = if !user.subject.starts_with("local:") {
            Err(Error::Conflict(format!(
                "{} signs in through the identity provider: there is no password to set",
                user.username
            )))
        } else if self.deps.store.password_hash(user.id).await?.is_some() {
            Err(Error::Conflict(format!(
                "{} has already set a password",
                user.username
            )))
        } else {
            Ok(())
        };
        self.guard
            .audited(actor, action::USER_INVITE, username, None, invitable)
            .await?;
        let (invite, secret) = new_invite(actor, user.id);
        let audit =
            AuditEvent::success(actor, action::USER_INVITE, &user.username).with_detail(format!(
                "link valid until {}",
                invite.expires_at.format("%Y-%m-%d %H:%M UTC")
            ));
        self.deps
            .store
            .replace_invite(&invite, &secret::token_hash(&secret), &audit)
            .await?;
        Ok(IssuedInvite {
            invite,
            user,
            secret,
        })
    }

    /// The open invitation behind a link: whom it is for and until when it works. Unknown,
    /// used and expired links are all "not found".
    pub async fn invitation(&self, secret: &str) -> Result<(User, Invite)> {
        let invite = self.open_invite(secret).await?;
        let user = self.deps.store.user_by_id(invite.user_id).await?;
        if user.disabled {
            return Err(Error::NotFound("invitation"));
        }
        Ok((user, invite))
    }

    /// Sets the invited person's password with the link's secret (no login needed: the link
    /// is the proof), under the same rules as every local password. The link then stops
    /// working. Returns the username to sign in with.
    pub async fn accept_invite(
        &self,
        secret: &str,
        password: &str,
        source_ip: Option<String>,
    ) -> Result<String> {
        let actor = Actor::anonymous().with_source_ip(source_ip);
        let found = self.invitation(secret).await;
        let (user, invite) = self
            .guard
            .audited(
                &actor,
                action::USER_INVITE_ACCEPT,
                "invitation",
                None,
                found,
            )
            .await?;
        let hash = secret::hash_password(password)?;
        let mut audit = AuditEvent::success(&actor, action::USER_INVITE_ACCEPT, &user.username)
            .with_detail("password set with an invitation link");
        audit.actor = user.username.clone();
        let accepted = self
            .deps
            .store
            .accept_invite(invite.id, &hash, crate::clock::now(), &audit)
            .await?;
        if !accepted {
            // Used or expired between the look-up and now (another tab).
            let e = Error::NotFound("invitation");
            self.guard
                .audit_refusal(&actor, action::USER_INVITE_ACCEPT, &user.username, None, &e)
                .await?;
            return Err(e);
        }
        Ok(user.username)
    }

    async fn open_invite(&self, secret: &str) -> Result<Invite> {
        if !secret.starts_with(INVITE_PREFIX) || secret.len() > 200 {
            return Err(Error::NotFound("invitation"));
        }
        match self
            .deps
            .store
            .invite_by_hash(&secret::token_hash(secret))
            .await?
        {
            Some(i) if i.is_open(crate::clock::now()) => Ok(i),
            _ => Err(Error::NotFound("invitation")),
        }
    }

    /// Usernames to offer when adding a member to `tenant`: every known user for operators;
    /// for a tenant admin, the members of the tenants they administer (they may not list the
    /// whole installation). Anyone else may not add members: forbidden.
    pub async fn known_usernames(&self, actor: &Actor, tenant: &str) -> Result<Vec<String>> {
        let who = actor.identity();
        let admin_of: Vec<String> = who
            .map(|w| {
                w.memberships
                    .iter()
                    .filter(|m| m.role == crate::identity::Role::Admin)
                    .map(|m| m.tenant_slug.to_string())
                    .collect()
            })
            .unwrap_or_default();
        let operator = policy::check(actor, Permission::ManageUsers).is_ok();
        if !operator && !admin_of.iter().any(|t| t == tenant) {
            return Err(if who.is_none() {
                Error::Unauthenticated
            } else {
                Error::Forbidden
            });
        }
        let all = self
            .deps
            .store
            .user_directory(crate::clock::now(), MAX_LISTED_USERS)
            .await?;
        Ok(all
            .into_iter()
            .filter(|u| operator || u.tenants.iter().any(|(t, _)| admin_of.contains(t)))
            .map(|u| u.user.username)
            .collect())
    }

    /// What the installation has, for the operators' first-run checklist; `None` for
    /// everyone else (they have nothing to set up).
    pub async fn setup(&self, actor: &Actor) -> Result<Option<SetupCounts>> {
        if actor.identity().is_none() && !actor.is_trusted() {
            return Err(Error::Unauthenticated);
        }
        if policy::check(actor, Permission::ManageUsers).is_err() {
            return Ok(None);
        }
        Ok(Some(self.deps.store.setup_counts().await?))
    }
}

/// A new invitation for `user_id` by `actor`, and its secret.
fn new_invite(actor: &Actor, user_id: Uuid) -> (Invite, String) {
    let now = crate::clock::now();
    let invite = Invite {
        id: Uuid::now_v7(),
        user_id,
        created_by: actor.to_string(),
        created_at: now,
        expires_at: now + Duration::days(INVITE_DAYS),
        used_at: None,
    };
    (invite, secret::random_secret(INVITE_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_users_are_checked() {
        let ok = NewUser {
            username: "dev".into(),
            display_name: Some("  Dev Eloper ".into()),
            email: Some("dev@example.test".into()),
            operator: false,
        };
        let u = parse_new_user(&ok).expect("valid");
        assert_eq!(
            (
                u.username.as_str(),
                u.subject.as_str(),
                u.display_name.as_deref()
            ),
            ("dev", "local:dev", Some("Dev Eloper"))
        );
        for (field, bad) in [
            (
                "username",
                NewUser {
                    username: "no spaces".into(),
                    ..ok.clone()
                },
            ),
            (
                "username",
                NewUser {
                    username: "system".into(),
                    ..ok.clone()
                },
            ),
            (
                "email",
                NewUser {
                    email: Some("nope".into()),
                    ..ok.clone()
                },
            ),
            (
                "email",
                NewUser {
                    email: Some("a @b".into()),
                    ..ok.clone()
                },
            ),
            (
                "display_name",
                NewUser {
                    display_name: Some("x".repeat(101)),
                    ..ok.clone()
                },
            ),
            (
                "display_name",
                NewUser {
                    display_name: Some("a\nb".into()),
                    ..ok.clone()
                },
            ),
        ] {
            assert_eq!(
                parse_new_user(&bad).map(|_| ()).expect_err("refused").field,
                field
            );
        }
        let empty = NewUser {
            email: Some(" ".into()),
            display_name: Some(String::new()),
            ..ok
        };
        let u = parse_new_user(&empty).expect("empty optional fields are none");
        assert_eq!((u.email, u.display_name), (None, None));
    }

    #[test]
    fn an_issued_invite_hides_its_secret() {
        let (invite, secret) = new_invite(&Actor::cli(None), Uuid::now_v7());
        assert!(secret.starts_with(INVITE_PREFIX));
        assert_eq!(
            invite.expires_at - invite.created_at,
            Duration::days(INVITE_DAYS)
        );
        let user = parse_new_user(&NewUser {
            username: "dev".into(),
            ..Default::default()
        })
        .expect("valid");
        let issued = IssuedInvite {
            invite,
            user,
            secret: secret.clone(),
        };
        assert!(!format!("{issued:?}").contains(&secret));
        assert_eq!(issued.path(), format!("/invite/{secret}"));
    }
}
