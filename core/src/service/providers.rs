//! Providers: a provisioner backend with its settings and credentials (operators).

use uuid::Uuid;

use super::access_sweep::AccessSweep;
use super::guard::Guard;
use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::cluster::{parse_description, parse_object_name, Provider, ProviderInput};
use crate::deps::Deps;
use crate::page::Page;
use crate::policy::Permission;
use crate::provisioner::{Capabilities, ParamSchema, Params, ProviderKind, Provisioner};
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

/// Providers and templates: what tenants request clusters from.
#[derive(Clone)]
pub struct Catalog {
    pub(super) deps: Deps,
    pub(super) guard: Guard,
    pub(super) sweep: AccessSweep,
    pub(super) tenancy: Tenancy,
}

impl Catalog {
    pub(super) fn new(deps: &Deps, guard: &Guard, sweep: &AccessSweep, tenancy: &Tenancy) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            sweep: sweep.clone(),
            tenancy: tenancy.clone(),
        }
    }
}

impl Catalog {
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
        self.guard
            .authorize(
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
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::PROVIDER_CREATE,
                &input.name,
                None,
            )
            .await?;
        let result = self.save_provider(actor, None, &input).await;
        self.guard
            .audited(actor, action::PROVIDER_CREATE, &input.name, None, result)
            .await
    }

    pub async fn update_provider(
        &self,
        actor: &Actor,
        name: &str,
        input: ProviderInput,
    ) -> Result<Provider> {
        self.guard
            .authorize(
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
        self.guard
            .audited(actor, action::PROVIDER_UPDATE, name, None, result)
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
                let kinds: Vec<_> = ProviderKind::ALL.iter().map(|k| k.as_str()).collect();
                ValidationError::new("kind", format!("must be one of: {}", kinds.join(", ")))
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
        let valid = schema
            .validate(&settings)
            .map_err(|e| e.within("settings"))?;
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
        let audit =
            AuditEvent::success(actor, verb, &provider.name).with_detail(format!("kind {kind}"));
        if existing.is_some() {
            self.deps.store.update_provider(&provider, &audit).await?;
        } else {
            self.deps.store.create_provider(&provider, &audit).await?;
        }
        tracing::info!(provider = %provider.name, %kind, "provider {what}");
        Ok(provider)
    }

    pub(super) async fn find_provider(&self, name_or_id: &str) -> Result<Provider> {
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
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::PROVIDER_DELETE,
                name,
                None,
            )
            .await?;
        let result = async {
            let p = self.find_provider(name).await?;
            let audit = AuditEvent::success(actor, action::PROVIDER_DELETE, &p.name);
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
        self.guard
            .audited(actor, action::PROVIDER_DELETE, name, None, result)
            .await
    }

    pub async fn provider(&self, actor: &Actor, name: &str) -> Result<Provider> {
        self.guard
            .authorize(
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
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::PROVIDER_VIEW,
                "providers",
                None,
            )
            .await?;
        self.deps.store.list_providers(page).await
    }
}
