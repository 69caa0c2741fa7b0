//! Tenant memberships managed in the portal (operators and tenant admins).

use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::identity::{Member, MembershipSource, Role};
use crate::policy::Permission;
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
        let Some(user) = self.deps.store.user_by_username(username).await? else {
            let e = Error::NotFound("user");
            self.guard
                .audit_refusal(actor, action::MEMBER_PUT, &target, Some(t.id), &e)
                .await?;
            return Err(e);
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
