//! Tenant memberships managed in the portal (operators and tenant admins).

use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::identity::{Member, MembershipSource, Role, Username};
use crate::invite::PENDING_PREFIX;
use crate::policy::Permission;
use crate::tenant::TenantSlug;
use crate::user::User;
use crate::{Actor, Error, Result};

impl Tenancy {
    /// Members of a tenant (anyone who may view the tenant).
    pub async fn members(&self, actor: &Actor, tenant: &str) -> Result<Vec<Member>> {
        let t = self
            .visible_tenant(actor, tenant, action::MEMBER_LIST)
            .await?;
        self.deps.store.members_of(t.id).await
    }

    /// Adds a user to a tenant or changes their role; the membership becomes a manual one
    /// (kept across identity-provider logins).
    pub async fn put_member(
        &self,
        actor: &Actor,
        tenant: &str,
        username: &str,
        role: Role,
    ) -> Result<()> {
        let t = self
            .visible_tenant(actor, tenant, action::MEMBER_PUT)
            .await?;
        let target = format!("{}/{username}", t.slug);
        self.guard
            .authorize(
                actor,
                Permission::ManageMembers(t.id),
                action::MEMBER_PUT,
                &target,
                Some(t.id),
            )
            .await?;
        let user = match self.deps.store.user_by_username(username).await? {
            Some(user) => user,
            // Someone who has not signed in yet: they get the membership at their first
            // single sign-on login under this username.
            None => {
                let pending = self.pending_user(actor, username, &t.slug).await;
                self.guard
                    .audited(actor, action::MEMBER_PUT, &target, Some(t.id), pending)
                    .await?
            }
        };
        let audit = AuditEvent::success(actor, action::MEMBER_PUT, &target)
            .in_tenant(t.id)
            .with_detail(format!("role {role}"));
        let done = self
            .deps
            .store
            .put_membership(t.id, user.id, role, MembershipSource::Manual, &audit)
            .await;
        self.identities.clear();
        if done.is_ok() {
            // A changed role: kubeconfigs bound to the old one are revoked.
            self.sweep.sweep_access_soon();
        }
        done
    }

    /// A user who has not signed in yet, known by the username the identity provider will
    /// give them ([`crate::invite::PENDING_PREFIX`]): no password, so no local login; their
    /// first single sign-on login under this username takes the account over.
    async fn pending_user(
        &self,
        actor: &Actor,
        username: &str,
        tenant: &TenantSlug,
    ) -> Result<User> {
        let name = Username::parse(username)?;
        let user = User {
            id: uuid::Uuid::now_v7(),
            subject: format!("{PENDING_PREFIX}{}", name.as_str()),
            username: name.as_str().to_owned(),
            email: None,
            display_name: None,
            is_operator: false,
            disabled: false,
            created_at: crate::clock::now(),
            last_login_at: None,
        };
        let audit = AuditEvent::success(actor, action::USER_CREATE, &user.username).with_detail(
            format!("added to {tenant} before their first single sign-on login"),
        );
        self.deps.store.create_user(&user, None, &audit).await?;
        Ok(user)
    }

    /// Removes a user from a tenant.
    pub async fn remove_member(&self, actor: &Actor, tenant: &str, username: &str) -> Result<()> {
        let t = self
            .visible_tenant(actor, tenant, action::MEMBER_REMOVE)
            .await?;
        let target = format!("{}/{username}", t.slug);
        self.guard
            .authorize(
                actor,
                Permission::ManageMembers(t.id),
                action::MEMBER_REMOVE,
                &target,
                Some(t.id),
            )
            .await?;
        let members = self.deps.store.members_of(t.id).await?;
        let Some(member) = members.iter().find(|m| m.username == username) else {
            let e = Error::NotFound("member");
            self.guard
                .audit_refusal(actor, action::MEMBER_REMOVE, &target, Some(t.id), &e)
                .await?;
            return Err(e);
        };
        let audit = AuditEvent::success(actor, action::MEMBER_REMOVE, &target).in_tenant(t.id);
        let done = self
            .deps
            .store
            .delete_membership(t.id, member.user_id, &audit)
            .await;
        self.identities.clear();
        if done.is_ok() {
            self.sweep.sweep_access_soon();
        }
        done.map(|_| ())
    }
}
