//! Addons: operators keep a catalog (KQueen's built-in addons plus their own definitions);
//! tenants switch addons on and off in their clusters, and move them to newer versions;
//! operators see which version runs where and upgrade many clusters at once. Addons are
//! applied with KQueen's credential (they are cluster-wide by nature and an operator vetted
//! them), each install, upgrade and removal a durable operation ([`run`]) with an audit
//! entry. A cluster's addons page asks the cluster how each one is doing ([`view`]).

mod fleet;
mod run;
mod view;

use std::collections::BTreeMap;

use super::cluster_admin::ClusterAdmin;
use super::clusters::Clusters;
use super::guard::Guard;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, ClusterState, EventKind, Operation, OperationKind};
use crate::deps::Deps;
use crate::policy::Permission;
use crate::workloads::addons::installed::{InstallState, InstalledAddon};
use crate::workloads::addons::{builtin, compare_versions, AddonDefinition};
use crate::{Actor, Error, Result, ValidationError};

pub use fleet::BulkOutcome;
pub use view::ClusterAddonView;

/// How long an install, upgrade or removal may take.
const OPERATION_MINUTES: i64 = 15;

#[derive(Clone)]
pub struct Addons {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    admin: ClusterAdmin,
}

impl Addons {
    pub(super) fn new(
        deps: &Deps,
        guard: &Guard,
        clusters: &Clusters,
        admin: &ClusterAdmin,
    ) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            admin: admin.clone(),
        }
    }

    /// Every addon version of the catalog, built-in ones first, by name and newest first.
    pub async fn catalog(&self, actor: &Actor) -> Result<Vec<AddonDefinition>> {
        if actor.identity().is_none() && !actor.is_trusted() {
            return Err(Error::Unauthenticated);
        }
        self.definitions().await
    }

    pub(crate) async fn definitions(&self) -> Result<Vec<AddonDefinition>> {
        let mut all = builtin::catalog();
        all.extend(self.deps.store.defined_addons().await?);
        all.sort_by(|a, b| {
            a.name
                .cmp(&b.name)
                .then_with(|| compare_versions(&b.version, &a.version))
        });
        Ok(all)
    }

    /// Adds an addon version to the catalog (operators).
    pub async fn define(&self, actor: &Actor, def: AddonDefinition) -> Result<()> {
        let target = format!("{} {}", def.name, def.version);
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::ADDON_DEFINE,
                &target,
                None,
            )
            .await?;
        let result = async {
            let def = AddonDefinition {
                builtin: false,
                ..def
            };
            def.check()?;
            if builtin::catalog()
                .iter()
                .any(|b| b.name == def.name && b.version == def.version)
            {
                return Err(Error::Conflict(format!(
                    "{target} is built into KQueen already"
                )));
            }
            let audit = AuditEvent::success(actor, action::ADDON_DEFINE, target.clone())
                .with_detail(format!(
                    "namespace {}, {} parameter(s)",
                    def.namespace,
                    def.parameters.len()
                ));
            self.deps
                .store
                .define_addon(&def, &actor.to_string(), &audit)
                .await
        }
        .await;
        self.guard
            .audited(actor, action::ADDON_DEFINE, &target, None, result)
            .await
    }

    /// Removes an operator-defined addon version from the catalog (not one a cluster runs).
    pub async fn undefine(&self, actor: &Actor, name: &str, version: &str) -> Result<()> {
        let target = format!("{name} {version}");
        self.guard
            .authorize(
                actor,
                Permission::ManageCatalog,
                action::ADDON_UNDEFINE,
                &target,
                None,
            )
            .await?;
        let audit = AuditEvent::success(actor, action::ADDON_UNDEFINE, target.clone());
        let builtin = builtin::catalog()
            .iter()
            .any(|b| b.name == name && b.version == version);
        let result = match self.deps.store.undefine_addon(name, version, &audit).await {
            Ok(false) if builtin => Err(Error::Conflict(format!(
                "{target} is built into KQueen and cannot be removed"
            ))),
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::NotFound("addon version")),
            Err(e) => Err(e),
        };
        self.guard
            .audited(actor, action::ADDON_UNDEFINE, &target, None, result)
            .await
    }

    /// Installs `name` in a cluster, or moves it to `version` (the newest when None on a
    /// new install; the installed one otherwise) with `parameters` (on an installed addon,
    /// parameters not given keep their values).
    pub async fn install(
        &self,
        actor: &Actor,
        cluster_id: &str,
        name: &str,
        version: Option<&str>,
        parameters: &BTreeMap<String, String>,
    ) -> Result<Operation> {
        let (cluster, target) = self
            .managed(actor, cluster_id, name, action::ADDON_INSTALL)
            .await?;
        let result = self
            .try_install(actor, &cluster, name, version, parameters)
            .await;
        self.guard
            .audited(
                actor,
                action::ADDON_INSTALL,
                &target,
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    async fn try_install(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        name: &str,
        version: Option<&str>,
        parameters: &BTreeMap<String, String>,
    ) -> Result<Operation> {
        if cluster.state != ClusterState::Ready {
            return Err(Error::Conflict(format!(
                "the cluster is {}; addons change when it is Ready",
                cluster.state.label()
            )));
        }
        let catalog = self.definitions().await?;
        let installed = self.deps.store.installed_addons(cluster.id).await?;
        let current = installed.iter().find(|a| a.name == name);
        let version = version
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .or_else(|| current.map(|c| c.version.clone()));
        let def = catalog
            .iter()
            .find(|d| d.name == name && version.as_ref().is_none_or(|v| &d.version == v))
            .ok_or_else(|| match &version {
                Some(v) => Error::Invalid(ValidationError::new(
                    "version",
                    format!("{name} {v} is not in the catalog"),
                )),
                None => Error::NotFound("addon"),
            })?;
        let mut given = current.map(|c| c.parameters.clone()).unwrap_or_default();
        // Parameters the new version no longer has are dropped, not refused.
        given.retain(|k, _| def.parameters.iter().any(|p| &p.name == k));
        given.extend(parameters.clone());
        let values = def.values(&given)?;
        def.render(&values)?;
        for needed in &def.requires {
            let ok = installed
                .iter()
                .any(|a| &a.name == needed && a.state == InstallState::Installed);
            if !ok {
                return Err(Error::Conflict(format!(
                    "{name} needs {needed}; install {needed} first"
                )));
            }
        }
        if current.is_none() {
            let (client, _) = self.admin.admin_client(cluster).await?;
            if crate::workloads::addons::state::present_unmanaged(&client, def)
                .await
                .map_err(super::apps::workload_error)?
            {
                return Err(Error::Conflict(format!(
                    "{name} already runs in this cluster, installed without KQueen; \
                     KQueen leaves it alone"
                )));
            }
        }
        let verb = match current {
            Some(c) if c.version != def.version => action::ADDON_UPGRADE,
            _ => action::ADDON_INSTALL,
        };
        let who = actor.to_string();
        let now = crate::clock::now();
        let op = Operation::new(
            cluster.id,
            OperationKind::AddonApply,
            Some(crate::cluster::OperationTarget::Addon(name.to_owned())),
            &who,
            now,
            chrono::Duration::minutes(OPERATION_MINUTES),
        );
        let what = match current {
            Some(c) if c.version != def.version => {
                format!("Upgrade of {name} from {} to {}", c.version, def.version)
            }
            Some(_) => format!("Change of {name} {}", def.version),
            None => format!("Install of {name} {}", def.version),
        };
        let event = ClusterEvent::new(
            cluster.id,
            Some(op.id),
            EventKind::State,
            format!("{what} requested by {who}"),
            now,
        );
        let audit = AuditEvent::success(actor, verb, format!("{}/{name}", cluster.name.as_str()))
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("version {}", def.version));
        let record = InstalledAddon {
            cluster_id: cluster.id,
            name: name.to_owned(),
            version: def.version.clone(),
            parameters: values,
            state: InstallState::Installing,
            error: None,
            objects: current.map(|c| c.objects.clone()).unwrap_or_default(),
            requested_by: who,
            updated_at: now,
            installed_at: None,
        };
        self.deps
            .store
            .queue_addon_apply(&record, &op, &event, &audit)
            .await?;
        Ok(op)
    }

    /// The cluster, if the actor may change its addons (`verb` audits a refusal), and the
    /// audit target `<cluster>/<addon>`.
    async fn managed(
        &self,
        actor: &Actor,
        cluster_id: &str,
        name: &str,
        verb: &str,
    ) -> Result<(Cluster, String)> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, verb)
            .await?;
        let target = format!("{}/{name}", cluster.name.as_str());
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                verb,
                &target,
                Some(cluster.tenant_id),
            )
            .await?;
        Ok((cluster, target))
    }

    /// Removes an addon KQueen installed: everything it applied, nothing else.
    pub async fn remove(&self, actor: &Actor, cluster_id: &str, name: &str) -> Result<Operation> {
        let (cluster, target) = self
            .managed(actor, cluster_id, name, action::ADDON_REMOVE)
            .await?;
        let result = async {
            let installed = self.deps.store.installed_addons(cluster.id).await?;
            if !installed.iter().any(|a| a.name == name) {
                return Err(Error::NotFound("installed addon"));
            }
            let catalog = self.definitions().await?;
            for other in installed.iter().filter(|a| a.name != name) {
                let needs = catalog
                    .iter()
                    .find(|d| d.name == other.name && d.version == other.version)
                    .is_some_and(|d| d.requires.iter().any(|r| r == name));
                if needs {
                    return Err(Error::Conflict(format!(
                        "{} needs {name}; remove {} first",
                        other.name, other.name
                    )));
                }
            }
            let who = actor.to_string();
            let now = crate::clock::now();
            let op = Operation::new(
                cluster.id,
                OperationKind::AddonRemove,
                Some(crate::cluster::OperationTarget::Addon(name.to_owned())),
                &who,
                now,
                chrono::Duration::minutes(OPERATION_MINUTES),
            );
            let event = ClusterEvent::new(
                cluster.id,
                Some(op.id),
                EventKind::State,
                format!("Removal of {name} requested by {who}"),
                now,
            );
            let audit = AuditEvent::success(actor, action::ADDON_REMOVE, target.clone())
                .in_tenant(cluster.tenant_id);
            self.deps
                .store
                .queue_addon_remove(cluster.id, name, &op, &event, &audit)
                .await?;
            Ok(op)
        }
        .await;
        self.guard
            .audited(
                actor,
                action::ADDON_REMOVE,
                &target,
                Some(cluster.tenant_id),
                result,
            )
            .await
    }
}
