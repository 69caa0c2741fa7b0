//! Templates: what tenants may request from a provider, with fixed and narrowed parameters.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::providers::Catalog;
use crate::audit::{action, AuditEvent};
use crate::cluster::{parse_description, parse_object_name, AdminAccess, Template, TemplateInput};
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::provisioner::schema::parse_overrides;
use crate::provisioner::{Capabilities, ParamSchema, Params, ProviderKind, Provisioner};
use crate::tenant::TenantSlug;
use crate::{Actor, Error, Result, ValidationError};

/// A template as tenants see it: the provider's kind and capabilities and the effective
/// request schema (the provisioner's, narrowed by the template; fixed values not asked).
#[derive(Debug, Clone)]
pub struct TemplateView {
    pub template: Template,
    pub provider_name: String,
    pub provider_kind: ProviderKind,
    pub capabilities: Capabilities,
    pub schema: ParamSchema,
    pub fixed: Params,
    /// Slugs of the tenants it is limited to (empty: all).
    pub tenant_slugs: Vec<String>,
}

impl Catalog {
    pub async fn create_template(
        &self,
        actor: &Actor,
        input: TemplateInput,
    ) -> Result<TemplateView> {
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::TEMPLATE_CREATE,
                &input.name,
                None,
            )
            .await?;
        let result = self.save_template(actor, None, &input).await;
        self.guard
            .audited(actor, action::TEMPLATE_CREATE, &input.name, None, result)
            .await
    }

    pub async fn update_template(
        &self,
        actor: &Actor,
        name: &str,
        input: TemplateInput,
    ) -> Result<TemplateView> {
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::TEMPLATE_UPDATE,
                name,
                None,
            )
            .await?;
        let result = async {
            let existing = self.find_template(name).await?;
            self.save_template(actor, Some(existing), &input).await
        }
        .await;
        self.guard
            .audited(actor, action::TEMPLATE_UPDATE, name, None, result)
            .await
    }

    async fn save_template(
        &self,
        actor: &Actor,
        existing: Option<Template>,
        input: &TemplateInput,
    ) -> Result<TemplateView> {
        let name = parse_object_name(&input.name)?;
        let description = parse_description(&input.description)?;
        let provider = match self.find_provider(input.provider.trim()).await {
            Ok(p) => p,
            Err(Error::NotFound(_)) => {
                return Err(ValidationError::new("provider", "no such provider").into())
            }
            Err(e) => return Err(e),
        };
        let overrides = parse_overrides(&input.overrides)?;
        let provisioner = self.provisioner(provider.kind)?;
        provisioner
            .cluster_schema()
            .refine(&overrides)
            .map_err(|e| e.within("overrides"))?;
        let timeout_minutes = input.timeout_minutes.unwrap_or(60);
        if !(1..=7 * 24 * 60).contains(&timeout_minutes) {
            return Err(ValidationError::new(
                "timeout_minutes",
                "must be between 1 and 10080 (a week)",
            )
            .into());
        }
        let admin_access = match input.admin_access.trim() {
            "" => AdminAccess::default(),
            text => AdminAccess::parse(text).ok_or_else(|| {
                ValidationError::new("admin_access", "must be 'namespaced' or 'cluster-admin'")
            })?,
        };
        let mut tenants = Vec::new();
        for raw in input
            .tenants
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
        {
            let slug = TenantSlug::parse(raw)
                .map_err(|_| ValidationError::new("tenants", format!("'{raw}' is not a tenant")))?;
            match self.deps.store.tenant_by_slug(&slug).await {
                Ok(t) => tenants.push(t.id),
                Err(Error::NotFound(_)) => {
                    return Err(
                        ValidationError::new("tenants", format!("no tenant '{raw}'")).into(),
                    )
                }
                Err(e) => return Err(e),
            }
        }
        tenants.sort();
        tenants.dedup();
        let now = crate::clock::now();
        let template = Template {
            id: existing.as_ref().map_or_else(Uuid::now_v7, |t| t.id),
            provider_id: provider.id,
            name,
            description,
            overrides,
            tenants,
            timeout_minutes,
            admin_access,
            disabled: input.disabled,
            created_at: existing.as_ref().map_or(now, |t| t.created_at),
            updated_at: now,
        };
        let verb = if existing.is_some() {
            action::TEMPLATE_UPDATE
        } else {
            action::TEMPLATE_CREATE
        };
        // The admin access is spelled out in the audit trail, and a change says from what.
        let before = existing.as_ref().map(|t| t.admin_access);
        let admin_detail = match before {
            Some(old) if old != admin_access => format!("{old} -> {admin_access}"),
            _ => admin_access.to_string(),
        };
        let audit = AuditEvent::success(actor, verb, &template.name).with_detail(format!(
            "provider {}, tenant admins: {admin_detail}",
            provider.name
        ));
        if existing.is_some() {
            self.deps.store.update_template(&template, &audit).await?;
        } else {
            self.deps.store.create_template(&template, &audit).await?;
        }
        if before.is_some_and(|old| old != admin_access) {
            // The template's clusters get the new bindings without waiting a minute.
            self.sweep.sweep_access_soon();
        }
        self.template_view(template).await
    }

    async fn find_template(&self, name_or_id: &str) -> Result<Template> {
        if let Ok(id) = Uuid::parse_str(name_or_id) {
            return self.deps.store.template(id).await;
        }
        self.deps
            .store
            .template_by_name(name_or_id.trim())
            .await?
            .ok_or(Error::NotFound("template"))
    }

    pub(crate) async fn template_view(&self, template: Template) -> Result<TemplateView> {
        let mut views = self.template_views(vec![template]).await?;
        views.pop().ok_or(Error::NotFound("template"))
    }

    /// Views of templates, their tenants' slugs resolved by id in one query for them all.
    /// Never through a page of the tenant list: a tenant past its end would drop out, and a
    /// limited template would read (and be saved back) as offered to every tenant.
    pub(crate) async fn template_views(
        &self,
        templates: Vec<Template>,
    ) -> Result<Vec<TemplateView>> {
        let ids: Vec<Uuid> = templates
            .iter()
            .flat_map(|t| t.tenants.iter().copied())
            .collect();
        let slugs: BTreeMap<Uuid, String> = if ids.is_empty() {
            BTreeMap::new()
        } else {
            self.deps
                .store
                .tenants_by_ids(&ids)
                .await?
                .into_iter()
                .map(|t| (t.id, t.slug.as_str().to_owned()))
                .collect()
        };
        let mut views = Vec::with_capacity(templates.len());
        for template in templates {
            let provider = self.deps.store.provider(template.provider_id).await?;
            let provisioner = self.provisioner(provider.kind)?;
            let (schema, fixed) = refined_schema(provisioner.as_ref(), &template)?;
            let tenant_slugs = template_tenant_slugs(&template, &slugs)?;
            views.push(TemplateView {
                provider_name: provider.name,
                provider_kind: provider.kind,
                capabilities: provisioner.capabilities_for(&provider.config),
                schema,
                fixed,
                tenant_slugs,
                template,
            });
        }
        Ok(views)
    }

    pub async fn delete_template(&self, actor: &Actor, name: &str) -> Result<()> {
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::TEMPLATE_DELETE,
                name,
                None,
            )
            .await?;
        let result = async {
            let t = self.find_template(name).await?;
            let audit = AuditEvent::success(actor, action::TEMPLATE_DELETE, &t.name);
            if !self.deps.store.delete_template(t.id, &audit).await? {
                return Err(Error::NotFound("template"));
            }
            Ok(())
        }
        .await;
        self.guard
            .audited(actor, action::TEMPLATE_DELETE, name, None, result)
            .await
    }

    /// Templates: all of them for operators (with `tenant: None`); with a tenant, those
    /// offered to it (members of the tenant and operators).
    pub async fn list_templates(
        &self,
        actor: &Actor,
        tenant: Option<&str>,
        page: Page,
    ) -> Result<Vec<TemplateView>> {
        let templates = match tenant {
            None => {
                self.guard
                    .authorize(
                        actor,
                        Permission::ManageCatalog,
                        action::TEMPLATE_VIEW,
                        "templates",
                        None,
                    )
                    .await?;
                self.deps.store.list_templates(None, page).await?
            }
            Some(slug) => {
                let t = self
                    .tenancy
                    .visible_tenant(actor, slug, action::TEMPLATE_VIEW)
                    .await?;
                self.deps.store.list_templates(Some(t.id), page).await?
            }
        };
        self.template_views(templates).await
    }

    /// One template; tenants see it only when it is offered to one of their tenants.
    pub async fn template(&self, actor: &Actor, name: &str) -> Result<TemplateView> {
        let found = match self.find_template(name).await {
            Ok(t) => Some(t),
            Err(Error::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        let allowed = match (&found, actor.identity()) {
            (Some(_), _) if policy::check(actor, Permission::ManageCatalog).is_ok() => true,
            (Some(t), Some(who)) if !t.disabled => {
                t.tenants.is_empty() && !who.memberships.is_empty()
                    || t.tenants.iter().any(|id| who.role_in(*id).is_some())
            }
            _ => false,
        };
        match found {
            Some(t) if allowed => self.template_view(t).await,
            _ => {
                let e = if actor.identity().is_none() && !actor.is_trusted() {
                    Error::Unauthenticated
                } else {
                    Error::NotFound("template")
                };
                self.guard
                    .audit_refusal(actor, action::TEMPLATE_VIEW, name, None, &e)
                    .await?;
                Err(e)
            }
        }
    }
}

/// What a template lets tenants ask of its provisioner: the cluster schema narrowed by the
/// template's overrides, and the values it fixes.
pub(super) fn refined_schema(
    provisioner: &dyn Provisioner,
    template: &Template,
) -> Result<(ParamSchema, Params)> {
    provisioner
        .cluster_schema()
        .refine(&template.overrides)
        .map_err(|e| Error::Corrupt(format!("template {}: {e}", template.name)))
}

/// The slugs of the tenants a template is limited to, from `slugs` (tenant id -> slug). A
/// limited template whose tenants cannot all be named is corrupt, not "offered to every
/// tenant": an empty list would mean exactly that, and an edit would save it so.
fn template_tenant_slugs(
    template: &Template,
    slugs: &BTreeMap<Uuid, String>,
) -> Result<Vec<String>> {
    template
        .tenants
        .iter()
        .map(|id| {
            slugs.get(id).cloned().ok_or_else(|| {
                Error::Corrupt(format!("template {}: unknown tenant {id}", template.name))
            })
        })
        .collect()
}
