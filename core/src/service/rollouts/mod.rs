//! Upgrades in waves ([`crate::rollout`]): planned, started, followed, paused, resumed and
//! aborted by operators (across the fleet) and tenant admins (their tenant's clusters). The
//! waves themselves are driven by [`Rollouts::drive`] (`drive.rs`), which the engine's
//! periodic job runs on one replica at a time.

mod candidates;
mod drive;

use uuid::Uuid;

use super::clusters::Clusters;
use super::guard::Guard;
use super::tenants::Tenancy;
use crate::audit::{action, AuditEvent};
use crate::deps::Deps;
use crate::policy::{self, Permission};
use crate::rollout::plan::{self, Plan};
use crate::rollout::{
    version, MemberState, MemberTally, Rollout, RolloutFilter, RolloutMember, RolloutState,
    MAX_CLUSTERS, MAX_WAVE_SIZE,
};
use crate::store::{MemberChange, RolloutChange};
use crate::tenant::Tenant;
use crate::{Actor, Error, Result, ValidationError};

/// Rollouts listed at most.
const LISTED: u32 = 200;

/// A rollout as asked for.
#[derive(Debug, Clone, Default)]
pub struct RolloutInput {
    /// Tenant slug: only its clusters (tenant admins must name theirs).
    pub tenant: Option<String>,
    /// Provider name: only its clusters.
    pub provider: Option<String>,
    /// Only clusters at this version (`1.20` takes 1.20.x).
    pub version: Option<String>,
    pub target_version: String,
    pub wave_size: u32,
}

/// A rollout with its clusters.
#[derive(Debug, Clone)]
pub struct RolloutView {
    pub rollout: Rollout,
    /// By wave and place.
    pub members: Vec<RolloutMember>,
}

#[derive(Clone)]
pub struct Rollouts {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    tenancy: Tenancy,
}

/// A version-shaped text (`1.21`, `v1.21.3`), trimmed; `field` names it in the error.
fn checked_version(field: &'static str, text: &str) -> Result<String> {
    match version::shaped(text) {
        Some(v) if version::parts(v).is_some() => Ok(v.to_owned()),
        _ => Err(ValidationError::new(field, version::SHAPE).into()),
    }
}

/// An optional filter text: blank is none.
fn blank_is_none(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|v| !v.is_empty())
}

impl Rollouts {
    pub(super) fn new(deps: &Deps, guard: &Guard, clusters: &Clusters, tenancy: &Tenancy) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            tenancy: tenancy.clone(),
        }
    }

    /// The input checked, its tenant resolved, and the actor allowed to roll out there.
    async fn admitted(
        &self,
        actor: &Actor,
        input: &RolloutInput,
        verb: &str,
    ) -> Result<(Option<Tenant>, RolloutFilter, String, u32)> {
        let tenant = match blank_is_none(input.tenant.as_deref()) {
            Some(slug) => Some(self.tenancy.visible_tenant(actor, slug, verb).await?),
            None => None,
        };
        let scope = tenant.as_ref().map(|t| t.id);
        let what = tenant
            .as_ref()
            .map_or("fleet".to_owned(), |t| t.slug.to_string());
        self.guard
            .authorize(actor, Permission::ManageRollouts(scope), verb, &what, scope)
            .await?;
        let checked = async {
            let target = checked_version("target_version", &input.target_version)?;
            if !(1..=MAX_WAVE_SIZE).contains(&input.wave_size) {
                return Err(ValidationError::new(
                    "wave_size",
                    format!("must be between 1 and {MAX_WAVE_SIZE}"),
                )
                .into());
            }
            let version = match blank_is_none(input.version.as_deref()) {
                Some(v) => Some(checked_version("version", v)?),
                None => None,
            };
            let provider = match blank_is_none(input.provider.as_deref()) {
                Some(name) => match self.deps.store.provider_by_name(name).await? {
                    Some(p) => Some(p.name),
                    None => {
                        return Err(ValidationError::new(
                            "provider",
                            format!("there is no provider named {name}"),
                        )
                        .into())
                    }
                },
                None => None,
            };
            let filter = RolloutFilter {
                tenant: tenant.as_ref().map(|t| t.slug.to_string()),
                provider,
                version,
            };
            Ok((filter, target))
        }
        .await;
        let (filter, target) = self
            .guard
            .audited(actor, verb, &what, scope, checked)
            .await?;
        Ok((tenant, filter, target, input.wave_size))
    }

    /// What a rollout of `input` would do: its waves and the clusters it leaves out, with
    /// why. Nothing is written.
    pub async fn plan(&self, actor: &Actor, input: &RolloutInput) -> Result<Plan> {
        let verb = action::ROLLOUT_PLAN;
        let (tenant, filter, target, wave_size) = self.admitted(actor, input, verb).await?;
        let candidates = self.candidates(tenant.as_ref(), &filter, &target).await?;
        Ok(plan::plan(&candidates, &filter, &target, wave_size))
    }

    /// Starts a rollout of `input`: its plan is recorded and its first wave starts at once.
    /// Conflict when it would upgrade no cluster, more than [`MAX_CLUSTERS`], or one that
    /// another open rollout holds.
    pub async fn start(&self, actor: &Actor, input: &RolloutInput) -> Result<RolloutView> {
        let verb = action::ROLLOUT_START;
        let (tenant, filter, target, wave_size) = self.admitted(actor, input, verb).await?;
        let candidates = self.candidates(tenant.as_ref(), &filter, &target).await?;
        let plan = plan::plan(&candidates, &filter, &target, wave_size);
        let scope = tenant.as_ref().map(|t| t.id);
        let what = tenant
            .as_ref()
            .map_or("fleet".to_owned(), |t| t.slug.to_string());
        let sized = match plan.clusters() {
            0 => Err(Error::Conflict(match plan.excluded.first() {
                Some(e) => format!(
                    "no cluster would be upgraded to {target}: {} cluster(s) match but are left \
                     out ({}: {}{})",
                    plan.excluded.len(),
                    e.cluster.name,
                    e.reason,
                    if plan.excluded.len() > 1 { "; …" } else { "" }
                ),
                None => format!("no cluster matches: nothing to upgrade to {target}"),
            })),
            n if n > MAX_CLUSTERS => Err(Error::Conflict(format!(
                "{n} clusters match; one rollout upgrades {MAX_CLUSTERS} at most: narrow the \
                 filter"
            ))),
            _ => Ok(()),
        };
        self.guard.audited(actor, verb, &what, scope, sized).await?;
        let now = crate::clock::now();
        let mut rollout = Rollout {
            id: Uuid::now_v7(),
            tenant_id: scope,
            target_version: target.clone(),
            wave_size,
            filter,
            state: RolloutState::Running,
            wave: 0,
            waves: u32::try_from(plan.waves.len()).unwrap_or(u32::MAX),
            reason: None,
            created_by: actor.to_string(),
            created_at: now,
            updated_at: now,
            tally: MemberTally::default(),
        };
        let mut members = Vec::new();
        for (wave, clusters) in plan.waves.iter().enumerate() {
            for (position, c) in clusters.iter().enumerate() {
                members.push(RolloutMember {
                    rollout_id: rollout.id,
                    cluster_id: c.cluster_id,
                    cluster_name: c.name.clone(),
                    tenant_id: c.tenant_id,
                    tenant_slug: c.tenant.clone(),
                    wave: u32::try_from(wave).unwrap_or(u32::MAX),
                    position: u32::try_from(position).unwrap_or(u32::MAX),
                    from_version: c.version.clone().unwrap_or_default(),
                    state: MemberState::Waiting,
                    operation_id: None,
                    reason: None,
                    updated_at: now,
                });
                rollout.tally.count(MemberState::Waiting);
            }
        }
        let audit = AuditEvent::success(actor, verb, rollout.id.to_string()).with_detail(format!(
            "upgrade to {target}: {} cluster(s) in {} wave(s) of {wave_size}",
            members.len(),
            rollout.waves
        ));
        let mut audit = audit;
        audit.tenant_id = scope;
        let created = self
            .deps
            .store
            .create_rollout(&rollout, &members, &audit)
            .await;
        self.guard
            .audited(actor, verb, &what, scope, created)
            .await?;
        if let Err(e) = self.drive_rollout(rollout.id).await {
            // The periodic turn starts it.
            tracing::warn!(rollout = %rollout.id, error = %e, "cannot start a rollout's first wave now");
        }
        self.view(rollout.id).await
    }

    /// The rollouts the actor may see, newest first: every one for operators, those of the
    /// tenants they administer for tenant admins (Forbidden for anyone else).
    pub async fn list(&self, actor: &Actor) -> Result<Vec<Rollout>> {
        let verb = action::ROLLOUT_VIEW;
        let scope = if policy::check(actor, Permission::ManageRollouts(None)).is_ok() {
            None
        } else {
            let admin_of: Vec<Uuid> = actor
                .identity()
                .map(|who| who.admin_tenants().collect())
                .unwrap_or_default();
            if admin_of.is_empty() {
                // The refusal the policy gives (Unauthenticated for no one), audited.
                let refused = policy::check(actor, Permission::ManageRollouts(None));
                self.guard
                    .authorize(
                        actor,
                        Permission::ManageRollouts(None),
                        verb,
                        "rollouts",
                        None,
                    )
                    .await?;
                refused?;
            }
            Some(admin_of)
        };
        self.deps.store.rollouts(scope.as_deref(), LISTED).await
    }

    /// One rollout with its clusters.
    pub async fn get(&self, actor: &Actor, id: &str) -> Result<RolloutView> {
        let rollout = self.visible(actor, id, action::ROLLOUT_VIEW).await?;
        self.view(rollout.id).await
    }

    async fn view(&self, id: Uuid) -> Result<RolloutView> {
        Ok(RolloutView {
            rollout: self.deps.store.rollout(id).await?,
            members: self.deps.store.rollout_members(id).await?,
        })
    }

    /// The rollout `id` names, for an actor who may manage it: another tenant's, or none,
    /// answers NotFound; a tenant member who is not its admin, Forbidden. Refusals audited.
    async fn visible(&self, actor: &Actor, id: &str, verb: &str) -> Result<Rollout> {
        let found = match Uuid::parse_str(id.trim()) {
            Ok(uuid) => match self.deps.store.rollout(uuid).await {
                Ok(r) => Some(r),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        let error = match &found {
            Some(r) => match policy::check(actor, Permission::ManageRollouts(r.tenant_id)) {
                Ok(()) => return found.ok_or(Error::NotFound("rollout")),
                Err(Error::Unauthenticated) => Error::Unauthenticated,
                Err(e) => match r.tenant_id {
                    Some(t) if policy::check(actor, Permission::ViewTenant(t)).is_ok() => e,
                    _ => Error::NotFound("rollout"),
                },
            },
            None if actor.identity().is_none() && !actor.is_trusted() => Error::Unauthenticated,
            None => Error::NotFound("rollout"),
        };
        let tenant = found.as_ref().and_then(|r| r.tenant_id);
        self.guard
            .audit_refusal(actor, verb, id, tenant, &error)
            .await?;
        Err(error)
    }

    /// Moves the rollout `id` from one of `from` to `to` for `actor`, audited as `verb`;
    /// Conflict (with `refusal`'s words) when it is in none of `from`.
    async fn change(
        &self,
        actor: &Actor,
        rollout: &Rollout,
        from: &[RolloutState],
        to: RolloutState,
        verb: &str,
        reason: String,
    ) -> Result<RolloutView> {
        let now = crate::clock::now();
        let mut audit =
            AuditEvent::success(actor, verb, rollout.id.to_string()).with_detail(&reason);
        audit.tenant_id = rollout.tenant_id;
        let change = RolloutChange {
            state: to,
            wave: None,
            reason: Some(&reason),
            at: now,
        };
        let moved = self
            .deps
            .store
            .move_rollout(rollout.id, from, &change, Some(&audit))
            .await?;
        let result = if moved {
            Ok(())
        } else {
            let now_in = self.deps.store.rollout(rollout.id).await?.state;
            Err(Error::Conflict(format!(
                "the rollout is {now_in}: it cannot be {}",
                match to {
                    RolloutState::Paused => "paused",
                    RolloutState::Running => "resumed",
                    _ => "aborted",
                }
            )))
        };
        self.guard
            .audited(
                actor,
                verb,
                &rollout.id.to_string(),
                rollout.tenant_id,
                result,
            )
            .await?;
        self.view(rollout.id).await
    }

    /// Pauses a running rollout: upgrades under way finish, no new one starts.
    pub async fn pause(&self, actor: &Actor, id: &str) -> Result<RolloutView> {
        let verb = action::ROLLOUT_PAUSE;
        let rollout = self.visible(actor, id, verb).await?;
        let why = format!("paused by {actor}");
        self.change(
            actor,
            &rollout,
            &[RolloutState::Running],
            RolloutState::Paused,
            verb,
            why,
        )
        .await
    }

    /// Resumes a paused rollout: its failed clusters that are Ready again are tried again,
    /// the others stay failed, and the waves go on.
    pub async fn resume(&self, actor: &Actor, id: &str) -> Result<RolloutView> {
        let verb = action::ROLLOUT_RESUME;
        let rollout = self.visible(actor, id, verb).await?;
        if rollout.state == RolloutState::Paused {
            self.retry_failed(&rollout).await?;
        }
        let why = format!("resumed by {actor}");
        let view = self
            .change(
                actor,
                &rollout,
                &[RolloutState::Paused],
                RolloutState::Running,
                verb,
                why,
            )
            .await?;
        if let Err(e) = self.drive_rollout(rollout.id).await {
            tracing::warn!(rollout = %rollout.id, error = %e, "cannot go on with a resumed rollout now");
        }
        self.view(view.rollout.id).await
    }

    /// Aborts a running or paused rollout: upgrades under way finish; the clusters still
    /// waiting are skipped.
    pub async fn abort(&self, actor: &Actor, id: &str) -> Result<RolloutView> {
        let verb = action::ROLLOUT_ABORT;
        let rollout = self.visible(actor, id, verb).await?;
        let why = format!("aborted by {actor}");
        self.change(
            actor,
            &rollout,
            &[RolloutState::Running, RolloutState::Paused],
            RolloutState::Aborted,
            verb,
            why,
        )
        .await
    }

    /// Puts the failed clusters of `rollout` that are Ready again back to waiting.
    async fn retry_failed(&self, rollout: &Rollout) -> Result<()> {
        let now = crate::clock::now();
        for m in self.deps.store.rollout_members(rollout.id).await? {
            if m.state != MemberState::Failed {
                continue;
            }
            let ready = match self.deps.store.cluster(m.cluster_id).await {
                Ok(c) => c.state == crate::cluster::ClusterState::Ready,
                Err(Error::NotFound(_)) => false,
                Err(e) => return Err(e),
            };
            if ready {
                let change = MemberChange {
                    state: MemberState::Waiting,
                    operation_id: None,
                    reason: Some("tried again on resume"),
                    at: now,
                };
                self.deps
                    .store
                    .move_member(rollout.id, m.cluster_id, MemberState::Failed, &change)
                    .await?;
            }
        }
        Ok(())
    }
}
