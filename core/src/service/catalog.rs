//! Providers and templates: the operators' catalogue of what tenants may request.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Kqueen;
use crate::audit::{action, AuditEvent, Outcome};
use crate::cluster::{
    parse_description, parse_object_name, AdminAccess, Provider, ProviderInput, Template,
    TemplateInput,
};
use crate::page::Page;
use crate::policy::{self, Permission};
use crate::provisioner::{
    Capabilities, ParamOverride, ParamSchema, Params, ProviderKind, Provisioner,
};
use crate::tenant::TenantSlug;
use crate::vault::{names, Secret};
use crate::{Actor, Error, Result, ValidationError};

/// A provisioner kind as the portal shows it.
#[derive(Debug, Clone)]
pub struct KindInfo {
    pub kind: ProviderKind,
    pub capabilities: Capabilities,
    pub provider_schema: ParamSchema,
    pub cluster_schema: ParamSchema,
}

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

/// Where a provider's secret setting lives in the vault.
impl Kqueen {
    pub(super) fn provisioner(
        &self,
        kind: ProviderKind,
    ) -> Result<std::sync::Arc<dyn Provisioner>> {
        self.deps.registry.get(kind).ok_or_else(|| {
            Error::Invalid(ValidationError::new(
                "kind",
                format!("no provisioner of kind '{kind}' in this portal"),
            ))
        })
    }

    /// The provisioner kinds this portal offers (operators).
    pub async fn provider_kinds(&self, actor: &Actor) -> Result<Vec<KindInfo>> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_VIEW,
            "kinds",
            None,
        )
        .await?;
        Ok(self
            .deps
            .registry
            .kinds()
            .filter_map(|k| self.deps.registry.get(k))
            .map(|p| KindInfo {
                kind: p.kind(),
                capabilities: p.capabilities(),
                provider_schema: p.provider_schema(),
                cluster_schema: p.cluster_schema(),
            })
            .collect())
    }

    pub async fn create_provider(&self, actor: &Actor, input: ProviderInput) -> Result<Provider> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_CREATE,
            &input.name,
            None,
        )
        .await?;
        let result = self.save_provider(actor, None, &input).await;
        self.audited(actor, action::PROVIDER_CREATE, &input.name, None, result)
            .await
    }

    pub async fn update_provider(
        &self,
        actor: &Actor,
        name: &str,
        input: ProviderInput,
    ) -> Result<Provider> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_UPDATE,
            name,
            None,
        )
        .await?;
        let result = async {
            let existing = self.find_provider(name).await?;
            self.save_provider(actor, Some(existing), &input).await
        }
        .await;
        self.audited(actor, action::PROVIDER_UPDATE, name, None, result)
            .await
    }

    async fn save_provider(
        &self,
        actor: &Actor,
        existing: Option<Provider>,
        input: &ProviderInput,
    ) -> Result<Provider> {
        let name = parse_object_name(&input.name)?;
        let description = parse_description(&input.description)?;
        let kind = match &existing {
            Some(p) => p.kind,
            None => ProviderKind::parse(input.kind.trim()).ok_or_else(|| {
                ValidationError::new("kind", "must be one of: import, command, jenkins")
            })?,
        };
        let provisioner = self.provisioner(kind)?;
        let schema = provisioner.provider_schema();
        // Secret fields left empty on edit keep their stored value.
        let mut settings = input.settings.clone();
        let kept: Vec<String> = match &existing {
            Some(p) => schema
                .specs()
                .iter()
                .filter(|s| s.secret)
                .filter(|s| settings.get(&s.name).is_none_or(|v| v.is_empty()))
                .filter(|s| p.secret_fields.contains(&s.name))
                .map(|s| s.name.clone())
                .collect(),
            None => Vec::new(),
        };
        for k in &kept {
            // A placeholder that passes validation; the stored secret is not touched.
            settings.insert(k.clone(), "kept".into());
        }
        let valid = schema.validate(&settings)?;
        let (secrets, config): (Params, Params) = valid
            .into_iter()
            .partition(|(k, _)| schema.get(k).is_some_and(|s| s.secret));
        provisioner.check_provider(&config)?;
        let changed: Params = secrets
            .iter()
            .filter(|(k, _)| !kept.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        provisioner.check_provider_secrets(&changed)?;
        let now = crate::clock::now();
        let provider = Provider {
            id: existing.as_ref().map_or_else(Uuid::now_v7, |p| p.id),
            name,
            kind,
            description,
            config,
            secret_fields: secrets.keys().cloned().collect(),
            disabled: input.disabled,
            created_at: existing.as_ref().map_or(now, |p| p.created_at),
            updated_at: now,
        };
        for (field, value) in &secrets {
            if kept.contains(field) {
                continue;
            }
            self.deps
                .vault
                .put(
                    &names::provider_field(provider.id, field),
                    &Secret::new(value.as_bytes()),
                )
                .await?;
        }
        let (verb, what) = if existing.is_some() {
            (action::PROVIDER_UPDATE, "updated")
        } else {
            (action::PROVIDER_CREATE, "created")
        };
        let audit = AuditEvent::now(actor, verb, &provider.name, Outcome::Success)
            .with_detail(format!("kind {kind}"));
        if existing.is_some() {
            self.deps.store.update_provider(&provider, &audit).await?;
        } else {
            self.deps.store.create_provider(&provider, &audit).await?;
        }
        tracing::info!(provider = %provider.name, %kind, "provider {what}");
        Ok(provider)
    }

    async fn find_provider(&self, name_or_id: &str) -> Result<Provider> {
        if let Ok(id) = Uuid::parse_str(name_or_id) {
            return self.deps.store.provider(id).await;
        }
        self.deps
            .store
            .provider_by_name(name_or_id.trim())
            .await?
            .ok_or(Error::NotFound("provider"))
    }

    pub async fn delete_provider(&self, actor: &Actor, name: &str) -> Result<()> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_DELETE,
            name,
            None,
        )
        .await?;
        let result = async {
            let p = self.find_provider(name).await?;
            let audit = AuditEvent::now(actor, action::PROVIDER_DELETE, &p.name, Outcome::Success);
            if !self.deps.store.delete_provider(p.id, &audit).await? {
                return Err(Error::NotFound("provider"));
            }
            for field in &p.secret_fields {
                self.deps
                    .vault
                    .delete(&names::provider_field(p.id, field))
                    .await?;
            }
            Ok(())
        }
        .await;
        self.audited(actor, action::PROVIDER_DELETE, name, None, result)
            .await
    }

    pub async fn provider(&self, actor: &Actor, name: &str) -> Result<Provider> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_VIEW,
            name,
            None,
        )
        .await?;
        self.find_provider(name).await
    }

    pub async fn list_providers(&self, actor: &Actor, page: Page) -> Result<Vec<Provider>> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::PROVIDER_VIEW,
            "providers",
            None,
        )
        .await?;
        self.deps.store.list_providers(page).await
    }

    pub async fn create_template(
        &self,
        actor: &Actor,
        input: TemplateInput,
    ) -> Result<TemplateView> {
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::TEMPLATE_CREATE,
            &input.name,
            None,
        )
        .await?;
        let result = self.save_template(actor, None, &input).await;
        self.audited(actor, action::TEMPLATE_CREATE, &input.name, None, result)
            .await
    }

    pub async fn update_template(
        &self,
        actor: &Actor,
        name: &str,
        input: TemplateInput,
    ) -> Result<TemplateView> {
        self.authorize(
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
        self.audited(actor, action::TEMPLATE_UPDATE, name, None, result)
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
        let text = input.overrides.trim();
        let overrides: BTreeMap<String, ParamOverride> = if text.is_empty() {
            BTreeMap::new()
        } else {
            serde_json::from_str(text).map_err(|e| {
                ValidationError::new(
                    "overrides",
                    format!("must be a JSON object of parameter refinements: {e}"),
                )
            })?
        };
        let provisioner = self.provisioner(provider.kind)?;
        provisioner.cluster_schema().refine(&overrides)?;
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
        let audit = AuditEvent::now(actor, verb, &template.name, Outcome::Success).with_detail(
            format!("provider {}, tenant admins: {admin_detail}", provider.name),
        );
        if existing.is_some() {
            self.deps.store.update_template(&template, &audit).await?;
        } else {
            self.deps.store.create_template(&template, &audit).await?;
        }
        if before.is_some_and(|old| old != admin_access) {
            // The template's clusters get the new bindings without waiting a minute.
            self.sweep_access_soon();
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
        self.authorize(
            actor,
            Permission::ManageCatalog,
            action::TEMPLATE_DELETE,
            name,
            None,
        )
        .await?;
        let result = async {
            let t = self.find_template(name).await?;
            let audit = AuditEvent::now(actor, action::TEMPLATE_DELETE, &t.name, Outcome::Success);
            if !self.deps.store.delete_template(t.id, &audit).await? {
                return Err(Error::NotFound("template"));
            }
            Ok(())
        }
        .await;
        self.audited(actor, action::TEMPLATE_DELETE, name, None, result)
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
                self.authorize(
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
                self.audit_refusal(actor, action::TEMPLATE_VIEW, name, None, &e)
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
