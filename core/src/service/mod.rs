//! The use cases of the portal, by area. Every one takes the acting identity and checks the
//! policy ([`crate::policy`]) itself; web layers call exactly one of these per request and
//! never touch the store directly. Every refusal is recorded in the audit trail.
//!
//! Each area is its own type over the shared handles ([`Deps`]) and the [`guard::Guard`],
//! holding the areas it builds on, lower ones first: the cluster admin (how KQueen reaches a
//! cluster) and the access sweep; tenancy and the catalog; sign-in, tokens and the audit
//! trail; clusters; kubeconfigs and access; the fleet. [`Kqueen`] assembles them once and
//! hands each out.

mod access;
mod access_sweep;
mod addons;
mod approvals;
mod apps;
mod audit;
mod auth;
mod autoscaling;
mod backups;
mod cluster_admin;
mod clusters;
mod engine_hooks;
mod fleet;
mod guard;
mod identity_cache;
mod members;
mod providers;
mod quotas;
mod rollouts;
mod sweep_gate;
mod templates;
mod tenants;
mod tokens;
mod users;

use std::sync::Arc;

use crate::deps::Deps;
use crate::identity::GroupMap;
use crate::policy::{self, Permission};
use crate::provisioner::Registry;
use crate::store::{Backend, Counts, Store};
use crate::vault::Vault;
use crate::{Actor, Error, Result};

pub use crate::deps::ClusterSettings;
pub use crate::inventory::fleet::ImageRow;
pub use access::{Access, ClusterCredential, KubeconfigDownload};
pub use access_sweep::AccessSweep;
pub use addons::{Addons, BulkOutcome, ClusterAddonView};
pub use approvals::{ApprovalInput, Approvals};
pub use apps::{AppStatus, Apps, DeployPreview, DeployRequest};
pub use audit::AuditLog;
pub use auth::{Auth, ExternalLogin};
pub use autoscaling::{Autoscaler, AutoscalingView};
pub use backups::{BackupArchive, BackupOptions, BackupRef, Backups, RestorePlan, RestoreRequest};
pub use clusters::{AdoptRequest, ClusterDetail, Clusters};
pub use fleet::{
    Attention, ClusterSync, Fleet, FleetMetrics, FleetOverview, FleetTotals, InventorySettings,
    Tally, ATTENTION_SHOWN,
};
pub use providers::{Catalog, KindInfo};
pub use rollouts::{RolloutInput, RolloutView, Rollouts};
pub use templates::TemplateView;
pub use tenants::Tenancy;
pub use tokens::Tokens;
pub use users::Users;

use identity_cache::{IdentityCache, TokenCache};

/// Figures for the overview page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// Installation-wide counts: operators only.
    pub counts: Option<Counts>,
    pub backend: Backend,
}

/// KQueen's domain services over one [`Store`], by area. Cheap to clone: one reference
/// count (every server function and page takes it from the request's context; cloning the
/// areas themselves, dozens of reference counts, was a third of a page's CPU).
#[derive(Clone)]
pub struct Kqueen {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    deps: Deps,
    config: Config,
    areas: Areas,
}

/// What the builder methods set; the areas are assembled from it.
#[derive(Clone)]
struct Config {
    group_map: Arc<GroupMap>,
    inventory: Arc<InventorySettings>,
    identity_ttl: std::time::Duration,
}

#[derive(Clone)]
struct Areas {
    tenancy: Tenancy,
    catalog: Catalog,
    auth: Auth,
    tokens: Tokens,
    audit: AuditLog,
    clusters: Clusters,
    access: Access,
    apps: Apps,
    addons: Addons,
    backups: Backups,
    approvals: Approvals,
    rollouts: Rollouts,
    autoscaler: Autoscaler,
    sweep: AccessSweep,
    fleet: Fleet,
    users: Users,
}

impl Areas {
    fn assemble(deps: &Deps, config: &Config) -> Self {
        let guard = guard::Guard::new(deps.store.clone());
        let admin = cluster_admin::ClusterAdmin::new(deps.clone());
        let identities = Arc::new(IdentityCache::new(config.identity_ttl));
        let sweep = AccessSweep::new(deps.clone(), admin.clone());
        let tenancy = Tenancy::new(deps, &guard, &sweep, &identities);
        let catalog = Catalog::new(deps, &guard, &sweep, &tenancy);
        let auth = Auth::new(
            deps,
            &guard,
            &tenancy,
            &sweep,
            config.group_map.clone(),
            identities,
        );
        let tokens = Tokens::new(
            deps,
            &guard,
            &auth,
            Arc::new(TokenCache::new(config.identity_ttl)),
        );
        let audit = AuditLog::new(deps, &guard, &tenancy);
        let users = Users::new(deps, &guard);
        let clusters = Clusters::new(deps, &guard, &tenancy, &catalog, &admin);
        let access = Access::new(deps, &guard, &clusters, &admin);
        let apps = Apps::new(deps, &guard, &clusters, &access, &admin);
        let addons = Addons::new(deps, &guard, &clusters, &admin);
        let backups = Backups::new(deps, &guard, &clusters, &admin);
        let approvals = Approvals::new(deps, &guard, &clusters, &backups);
        let rollouts = Rollouts::new(deps, &guard, &clusters, &tenancy);
        let autoscaler = Autoscaler::new(deps, &guard, &clusters, &admin);
        let fleet = Fleet::new(
            deps,
            &guard,
            &clusters,
            &catalog,
            &admin,
            config.inventory.clone(),
        );
        Self {
            tenancy,
            catalog,
            auth,
            tokens,
            audit,
            clusters,
            access,
            apps,
            addons,
            backups,
            approvals,
            rollouts,
            autoscaler,
            sweep,
            fleet,
            users,
        }
    }
}

impl Kqueen {
    /// Services over `store`, with the built-in provisioners and a vault on the same database
    /// under a key that lives only as long as this process. Servers call
    /// [`Kqueen::with_vault`] with the configured key; the default suits tests.
    pub fn new(store: Arc<dyn Store>) -> Self {
        let deps = Deps::new(store);
        let config = Config {
            group_map: Arc::new(GroupMap::default()),
            inventory: Arc::new(InventorySettings::default()),
            identity_ttl: IdentityCache::DEFAULT_TTL,
        };
        Self::assembled(deps, config)
    }

    fn assembled(deps: Deps, config: Config) -> Self {
        let areas = Areas::assemble(&deps, &config);
        Self {
            inner: Arc::new(Inner {
                deps,
                config,
                areas,
            }),
        }
    }

    /// A copy with `change` applied to its handles and settings, the areas assembled again.
    fn changed(self, change: impl FnOnce(&mut Deps, &mut Config)) -> Self {
        let (mut deps, mut config) = (self.inner.deps.clone(), self.inner.config.clone());
        change(&mut deps, &mut config);
        Self::assembled(deps, config)
    }

    /// How long a resolved identity or API token may be reused by this process (default 2 s;
    /// zero: never). Changes made through this process are seen at once; another process's
    /// within `ttl`.
    pub fn with_identity_cache_ttl(self, ttl: std::time::Duration) -> Self {
        self.changed(|_, config| config.identity_ttl = ttl)
    }

    /// Uses `vault` for kubeconfigs and provider credentials.
    pub fn with_vault(self, vault: Vault) -> Self {
        self.changed(|deps, _| deps.vault = vault)
    }

    /// Uses these provisioners.
    pub fn with_registry(self, registry: Registry) -> Self {
        self.changed(|deps, _| deps.registry = Arc::new(registry))
    }

    pub fn with_cluster_settings(self, settings: ClusterSettings) -> Self {
        self.changed(|deps, _| deps.settings = Arc::new(settings))
    }

    /// Sets how identity-provider groups map to tenants and roles at login.
    pub fn with_group_map(self, map: GroupMap) -> Self {
        self.changed(|_, config| config.group_map = Arc::new(map))
    }

    /// How clusters' inventories are synced and judged.
    pub fn with_inventory_settings(self, settings: InventorySettings) -> Self {
        self.changed(|_, config| config.inventory = Arc::new(settings))
    }

    pub fn inventory_settings(&self) -> &InventorySettings {
        &self.inner.config.inventory
    }

    /// Tenants, their members and quotas.
    pub fn tenancy(&self) -> &Tenancy {
        &self.inner.areas.tenancy
    }

    /// Providers and templates.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.areas.catalog
    }

    /// Sign-in (external and local), identities, local users.
    pub fn auth(&self) -> &Auth {
        &self.inner.areas.auth
    }

    /// Users as operators manage them: list, create, invite; invitations accepted.
    pub fn users(&self) -> &Users {
        &self.inner.areas.users
    }

    /// API tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.inner.areas.tokens
    }

    /// The audit trail.
    pub fn audit(&self) -> &AuditLog {
        &self.inner.areas.audit
    }

    /// Clusters: request, view, scale, upgrade, delete.
    pub fn clusters(&self) -> &Clusters {
        &self.inner.areas.clusters
    }

    /// Kubeconfigs and per-user access.
    pub fn access(&self) -> &Access {
        &self.inner.areas.access
    }

    pub fn apps(&self) -> &Apps {
        &self.inner.areas.apps
    }

    /// Backups of clusters: take, list, download.
    pub fn backups(&self) -> &Backups {
        &self.inner.areas.backups
    }

    pub fn approvals(&self) -> &Approvals {
        &self.inner.areas.approvals
    }

    /// Upgrades in waves.
    pub fn rollouts(&self) -> &Rollouts {
        &self.inner.areas.rollouts
    }

    pub fn autoscaler(&self) -> &Autoscaler {
        &self.inner.areas.autoscaler
    }

    pub fn addons(&self) -> &Addons {
        &self.inner.areas.addons
    }

    /// The background pass that keeps users' access in every cluster in line.
    pub fn access_sweep(&self) -> &AccessSweep {
        &self.inner.areas.sweep
    }

    /// Inventories of the clusters and the fleet views over them.
    pub fn fleet(&self) -> &Fleet {
        &self.inner.areas.fleet
    }

    pub fn vault(&self) -> &Vault {
        &self.inner.deps.vault
    }

    pub fn registry(&self) -> &Registry {
        &self.inner.deps.registry
    }

    /// The operation engine over this installation's handles, with `config`.
    pub fn engine(&self, config: crate::engine::EngineConfig) -> crate::engine::Engine {
        crate::engine::Engine::new(self.inner.deps.clone(), Arc::new(self.clone()), config)
    }

    /// The store, for adapters that keep web-layer state in it (sessions).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.deps.store
    }

    /// Succeeds when the database is reachable (readiness).
    pub async fn ready(&self) -> Result<()> {
        self.inner.deps.store.ping().await
    }

    /// Closes the database connections; call once at shutdown.
    pub async fn shutdown(&self) {
        self.inner.deps.store.close().await;
    }

    pub async fn overview(&self, actor: &Actor) -> Result<Overview> {
        if actor.identity().is_none() && !actor.is_trusted() {
            return Err(Error::Unauthenticated);
        }
        let counts = match policy::check(actor, Permission::ListAllTenants) {
            Ok(()) => Some(self.inner.deps.store.counts().await?),
            Err(_) => None,
        };
        Ok(Overview {
            counts,
            backend: self.inner.deps.store.backend(),
        })
    }
}
