//! Authorization: who may do what. Every use case of [`crate::Kqueen`] checks here, so web
//! layers cannot forget it.
//!
//! | Action                                   | anonymous | member | tenant admin | operator | system, cli |
//! |------------------------------------------|-----------|--------|--------------|----------|-------------|
//! | see own identity, manage own API tokens  | –         | yes    | yes          | yes      | –           |
//! | list tenants                             | –         | own    | own          | all      | all         |
//! | view a tenant and its members            | –         | own    | own          | all      | all         |
//! | add, change, remove members of a tenant  | –         | –      | own          | all      | all         |
//! | view a tenant's audit events             | –         | –      | own          | all      | all         |
//! | view all audit events                    | –         | –      | –            | yes      | yes         |
//! | create tenants, create local users       | –         | –      | –            | yes      | yes         |
//! | see templates offered to a tenant        | –         | own    | own          | all      | all         |
//! | list, view clusters; own kubeconfig      | –         | own    | own          | all      | all         |
//! | request, scale, upgrade, delete clusters | –         | own    | own          | all      | all         |
//! | revoke another user's cluster access     | –         | –      | own          | all      | all         |
//! | back up, restore, delete backups         | –         | –      | own          | all      | all         |
//! | mark production; approve, refuse requests| –         | –      | own          | all      | all (1)     |
//! | upgrade in waves (rollouts)              | –         | –      | own tenant   | fleet    | all         |
//! | manage providers and templates           | –         | –      | –            | yes      | yes         |
//! | set a tenant's quota                     | –         | –      | –            | yes      | yes         |
//! | download a cluster's admin kubeconfig    | –         | –      | –            | yes      | yes         |
//!
//! Inside a cluster, a personal kubeconfig gives members `edit` and tenant admins `admin` in
//! the namespaces open to the tenant only (`cluster-admin` for tenant admins where the
//! cluster's template says so): see [`crate::kubernetes`] and README.
//!
//! (1) A request for approval is approved by a person (an operator or a tenant admin) other
//! than the one who asked: see [`crate::approval`].
//!
//! "own" means tenants the user is a member (or admin) of. Requests about a tenant the caller
//! cannot view answer "not found", so tenant names do not leak; every refusal is audited.

use uuid::Uuid;

use crate::identity::Role;
use crate::{Actor, Error, Result};

/// Something an actor wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Whoami, own API tokens: any logged-in user.
    SelfService,
    ViewTenant(Uuid),
    ManageMembers(Uuid),
    ViewTenantAudit(Uuid),
    ListAllTenants,
    ViewAllAudit,
    CreateTenant,
    ManageUsers,
    /// Request, scale, upgrade and delete the tenant's clusters.
    ManageClusters(Uuid),
    /// Revoke other users' cluster access in the tenant.
    ManageAccess(Uuid),
    /// Back up the tenant's clusters, see and download their backups.
    ManageBackups(Uuid),
    /// Mark the tenant's clusters production; approve or refuse a request to delete one,
    /// restore over one or unmark one.
    ApproveChanges(Uuid),
    /// Replace the machine of a dead node of the tenant's clusters.
    ReplaceNodes(Uuid),
    /// Plan, start, see, pause, resume and abort upgrades in waves: of the tenant's clusters
    /// (`Some`), or across the fleet (`None`: operators only).
    ManageRollouts(Option<Uuid>),
    /// Turn the autoscaling of the tenant's clusters on, change or turn it off.
    Autoscale(Uuid),
    /// Providers and templates.
    ManageCatalog,
    SetQuota,
    AdminKubeconfig,
}

/// Allows or refuses. Anonymous callers get [`Error::Unauthenticated`]; logged-in callers
/// without the right get [`Error::Forbidden`].
pub fn check(actor: &Actor, permission: Permission) -> Result<()> {
    if actor.is_trusted() {
        return match permission {
            Permission::SelfService => Err(Error::Forbidden),
            _ => Ok(()),
        };
    }
    let Some(who) = actor.identity() else {
        return Err(Error::Unauthenticated);
    };
    let allowed = match permission {
        Permission::SelfService => true,
        _ if who.is_operator => true,
        Permission::ViewTenant(t) | Permission::ManageClusters(t) => who.role_in(t).is_some(),
        Permission::ManageMembers(t)
        | Permission::ViewTenantAudit(t)
        | Permission::ManageAccess(t)
        | Permission::ManageBackups(t)
        | Permission::ApproveChanges(t)
        | Permission::ReplaceNodes(t)
        | Permission::Autoscale(t)
        | Permission::ManageRollouts(Some(t)) => who.role_in(t) == Some(Role::Admin),
        Permission::ListAllTenants
        | Permission::ViewAllAudit
        | Permission::CreateTenant
        | Permission::ManageUsers
        | Permission::ManageCatalog
        | Permission::SetQuota
        | Permission::AdminKubeconfig
        | Permission::ManageRollouts(None) => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(Error::Forbidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Identity, Membership, MembershipSource};
    use crate::tenant::TenantSlug;

    fn user(operator: bool, roles: &[(Uuid, Role)]) -> Actor {
        Actor::user(Identity {
            user_id: Uuid::now_v7(),
            username: "u".into(),
            email: None,
            display_name: None,
            is_operator: operator,
            memberships: roles
                .iter()
                .map(|(t, r)| Membership {
                    tenant_id: *t,
                    tenant_slug: TenantSlug::parse("t").expect("slug"),
                    role: *r,
                    source: MembershipSource::Manual,
                })
                .collect(),
        })
    }

    #[test]
    fn the_policy_table_holds() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let member = user(false, &[(a, Role::Member)]);
        let admin = user(false, &[(a, Role::Admin)]);
        let operator = user(true, &[]);
        let anonymous = Actor::anonymous();
        let cli = Actor::cli(None);
        use Permission::*;
        let cases = [
            (SelfService, [false, true, true, true, false]),
            (ViewTenant(a), [false, true, true, true, true]),
            (ViewTenant(b), [false, false, false, true, true]),
            (ManageMembers(a), [false, false, true, true, true]),
            (ManageMembers(b), [false, false, false, true, true]),
            (ViewTenantAudit(a), [false, false, true, true, true]),
            (ListAllTenants, [false, false, false, true, true]),
            (ViewAllAudit, [false, false, false, true, true]),
            (CreateTenant, [false, false, false, true, true]),
            (ManageUsers, [false, false, false, true, true]),
            (ManageClusters(a), [false, true, true, true, true]),
            (ManageClusters(b), [false, false, false, true, true]),
            (ManageAccess(a), [false, false, true, true, true]),
            (ManageAccess(b), [false, false, false, true, true]),
            (ManageBackups(a), [false, false, true, true, true]),
            (ManageBackups(b), [false, false, false, true, true]),
            (ApproveChanges(a), [false, false, true, true, true]),
            (ApproveChanges(b), [false, false, false, true, true]),
            (ReplaceNodes(a), [false, false, true, true, true]),
            (ReplaceNodes(b), [false, false, false, true, true]),
            (ManageRollouts(Some(a)), [false, false, true, true, true]),
            (ManageRollouts(Some(b)), [false, false, false, true, true]),
            (ManageRollouts(None), [false, false, false, true, true]),
            (ManageCatalog, [false, false, false, true, true]),
            (SetQuota, [false, false, false, true, true]),
            (AdminKubeconfig, [false, false, false, true, true]),
        ];
        for (permission, expected) in cases {
            let actors = [&anonymous, &member, &admin, &operator, &cli];
            for (actor, allowed) in actors.iter().zip(expected) {
                assert_eq!(
                    check(actor, permission).is_ok(),
                    allowed,
                    "{permission:?} for {actor}"
                );
            }
        }
        assert!(matches!(
            check(&anonymous, ViewTenant(a)),
            Err(Error::Unauthenticated)
        ));
        assert!(matches!(
            check(&member, ManageMembers(a)),
            Err(Error::Forbidden)
        ));
    }
}
