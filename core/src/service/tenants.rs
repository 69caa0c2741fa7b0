//! Tenants: create, view, list.

use super::access_sweep::AccessSweep;
use super::guard::Guard;
use super::identity_cache::IdentityCache;
use crate::audit::{action, AuditEvent};
use crate::deps::Deps;
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::tenant::{DisplayName, NewTenant, Tenant, TenantFilter, TenantSlug};
use crate::{Actor, Error, Result, ValidationError};
use std::sync::Arc;

/// Tenants, their members and quotas.
#[derive(Clone)]
pub struct Tenancy {
    pub(super) deps: Deps,
    pub(super) guard: Guard,
    pub(super) sweep: AccessSweep,
    pub(super) identities: Arc<IdentityCache>,
}

impl Tenancy {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        sweep: &AccessSweep,
        identities: &Arc<IdentityCache>,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            sweep: sweep.clone(),
            identities: identities.clone(),
        }
    }
}

impl Tenancy {
    /// Creates a tenant (operators). Refusals, invalid input and name clashes are audited.
    #[tracing::instrument(skip_all, fields(actor = %actor, slug = %input.slug))]
    pub async fn create_tenant(&self, actor: &Actor, input: NewTenant) -> Result<Tenant> {
        self.guard
            .authorize(
                actor,
                Permission::CreateTenant,
                action::TENANT_CREATE,
                &input.slug,
                None,
            )
            .await?;
        let result = self.try_create_tenant(actor, &input).await;
        self.guard
            .audited(actor, action::TENANT_CREATE, &input.slug, None, result)
            .await
    }

    async fn try_create_tenant(&self, actor: &Actor, input: &NewTenant) -> Result<Tenant> {
        let slug = TenantSlug::parse(&input.slug)?;
        let display_name = match input.display_name.as_deref().map(str::trim) {
            Some(name) if !name.is_empty() => DisplayName::parse(name)?,
            _ => DisplayName::parse(slug.as_str())?,
        };
        let tenant = Tenant {
            id: uuid::Uuid::now_v7(),
            slug,
            display_name,
            created_at: crate::clock::now(),
        };
        let audit = AuditEvent::success(actor, action::TENANT_CREATE, tenant.slug.as_str())
            .in_tenant(tenant.id);
        self.deps.store.create_tenant(&tenant, &audit).await?;
        tracing::info!(tenant = %tenant.slug, "tenant created");
        Ok(tenant)
    }

    /// A tenant the actor may view. Tenants the actor may not view are "not found" (their
    /// existence does not leak), and the attempt is audited.
    pub async fn tenant(&self, actor: &Actor, slug: &str) -> Result<Tenant> {
        self.visible_tenant(actor, slug, action::TENANT_VIEW).await
    }

    /// Resolves `slug` for an action about that tenant, refusing (and auditing `action`) when
    /// the actor may not even view it.
    pub(super) async fn visible_tenant(
        &self,
        actor: &Actor,
        slug: &str,
        action: &str,
    ) -> Result<Tenant> {
        let found = match TenantSlug::parse(slug) {
            Ok(s) => match self.deps.store.tenant_by_slug(&s).await {
                Ok(t) => Some(t),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        let tenant_id = found.as_ref().map(|t| t.id);
        let error = match found {
            Some(t) => match policy::check(actor, Permission::ViewTenant(t.id)) {
                Ok(()) => return Ok(t),
                Err(Error::Unauthenticated) => Error::Unauthenticated,
                // Not viewable answers like absent, so that tenant names do not leak.
                Err(_) => Error::NotFound("tenant"),
            },
            None => Error::NotFound("tenant"),
        };
        self.guard
            .audit_refusal(actor, action, slug, tenant_id, &error)
            .await?;
        Err(error)
    }

    /// The tenant an action about one tenant defaults to when the caller names none: the only
    /// tenant the caller belongs to where `permission` allows it. Operators, who may act in
    /// every tenant, get the same rule over their memberships. Belonging to several such
    /// tenants, or to none, is invalid input (field `tenant`): the caller has to name one.
    pub(super) fn only_tenant(
        actor: &Actor,
        permission: impl Fn(uuid::Uuid) -> Permission,
    ) -> Result<String> {
        let memberships = match actor.identity() {
            Some(identity) => identity.memberships.as_slice(),
            None if !actor.is_trusted() => return Err(Error::Unauthenticated),
            None => &[],
        };
        let mut allowed = memberships
            .iter()
            .filter(|m| policy::check(actor, permission(m.tenant_id)).is_ok());
        match (allowed.next(), allowed.next()) {
            (Some(only), None) => Ok(only.tenant_slug.as_str().to_owned()),
            (Some(_), Some(_)) => Err(ValidationError::new(
                "tenant",
                "required: you belong to several tenants, name one",
            )
            .into()),
            (None, _) => Err(ValidationError::new(
                "tenant",
                "required: you belong to no tenant where you may do this",
            )
            .into()),
        }
    }

    /// Tenants the actor may see: all for operators, their own for everyone else.
    pub async fn list_tenants(
        &self,
        actor: &Actor,
        filter: &TenantFilter,
        page: Page,
    ) -> Result<Vec<Tenant>> {
        let member = if policy::check(actor, Permission::ListAllTenants).is_ok() {
            None
        } else {
            self.guard
                .authorize(
                    actor,
                    Permission::SelfService,
                    action::TENANT_LIST,
                    "tenants",
                    None,
                )
                .await?;
            actor.identity().map(|i| i.user_id)
        };
        self.deps.store.list_tenants(filter, member, page).await
    }
}
