//! The rollouts' reads: the list page with its form and the previewed plan, and one
//! rollout's page.

use leptos::prelude::*;

use kqueen_dto::rollouts::RolloutDetail;

use super::dto::RolloutsPageDto;
use crate::AppError;

/// The rollouts the caller may see (operators: all; tenant admins: their tenants'), what the
/// "New rollout" form offers them, and, with `preview`, the plan of the form's values (nothing
/// is written). A refused preview is said at the input it concerns.
#[server(prefix = "/sfn", endpoint = "rollouts")]
pub async fn rollouts_page(
    tenant: Option<String>,
    provider: Option<String>,
    version: Option<String>,
    target_version: Option<String>,
    wave_size: Option<String>,
    preview: bool,
) -> Result<RolloutsPageDto, AppError> {
    use super::dto::RolloutForm;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    // Refused (members, nobody) before anything else is read.
    let rollouts = k.rollouts().list(&actor).await?;
    let fleet = kqueen_core::policy::check(
        &actor,
        kqueen_core::policy::Permission::ManageRollouts(None),
    )
    .is_ok();
    let tenants = if fleet {
        crate::ssr::filter_tenants(&k, &actor).await?
    } else {
        Some(administered(&actor))
    };
    let providers = provider_names(&k, &actor, fleet, tenants.as_deref()).await?;
    let typed = |v: Option<String>| v.map(|v| v.trim().to_owned()).unwrap_or_default();
    let mut form = RolloutForm {
        tenant: typed(tenant),
        provider: typed(provider),
        version: typed(version),
        target_version: typed(target_version),
        wave_size: typed(wave_size),
    };
    if form.tenant.is_empty() && !fleet {
        form.tenant = tenants
            .as_ref()
            .and_then(|t| t.first().cloned())
            .unwrap_or_default();
    }
    if form.wave_size.is_empty() {
        form.wave_size = "2".to_owned();
    }
    let mut page = RolloutsPageDto {
        rollouts: rollouts.into_iter().map(Into::into).collect(),
        tenants,
        fleet,
        providers,
        form,
        ..RolloutsPageDto::default()
    };
    if preview {
        let input = ssr::input(&page.form);
        match k.rollouts().plan(&actor, &input).await {
            Ok(plan) => page.plan = Some(plan.into()),
            Err(e) => {
                let (field, message) = ssr::refusal(&page.form, e)?;
                page.field = field;
                page.error = Some(message);
            }
        }
    }
    Ok(page)
}

/// One rollout with its clusters, by wave.
#[server(prefix = "/sfn", endpoint = "rollout")]
pub async fn rollout_page(id: String) -> Result<RolloutDetail, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    Ok(k.rollouts().get(&actor, &id).await?.into())
}

/// The slugs of the tenants the caller administers, in order.
#[cfg(feature = "ssr")]
fn administered(actor: &kqueen_core::Actor) -> Vec<String> {
    let mut slugs: Vec<String> = actor
        .identity()
        .map(|who| {
            who.admin_memberships()
                .map(|m| m.tenant_slug.to_string())
                .collect()
        })
        .unwrap_or_default();
    slugs.sort();
    slugs
}

/// The providers a rollout may be limited to: every one for operators; for tenant admins,
/// those of the templates offered to their tenants.
#[cfg(feature = "ssr")]
async fn provider_names(
    k: &kqueen_core::Kqueen,
    actor: &kqueen_core::Actor,
    fleet: bool,
    tenants: Option<&[String]>,
) -> Result<Vec<String>, kqueen_core::Error> {
    use kqueen_core::page::Page;

    let all = Page::new(Page::MAX_LIMIT, 0);
    let mut names = std::collections::BTreeSet::new();
    if fleet {
        for p in k.catalog().list_providers(actor, all).await? {
            names.insert(p.name);
        }
    } else {
        for slug in tenants.unwrap_or_default() {
            for t in k.catalog().list_templates(actor, Some(slug), all).await? {
                names.insert(t.provider_name);
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// The form's values as the core reads them, and its refusals as the form shows them.
#[cfg(feature = "ssr")]
pub(super) mod ssr {
    use kqueen_core::{Error, RolloutInput};

    use super::super::dto::RolloutForm;
    use crate::AppError;

    /// The inputs of the "New rollout" form (named as the core names its fields).
    pub const INPUTS: [&str; 5] = [
        "tenant",
        "provider",
        "version",
        "target_version",
        "wave_size",
    ];

    /// The form's values as the core reads them: blank filters are none; a wave size that is
    /// not a whole number is 0, which the core refuses at its field.
    pub fn input(form: &RolloutForm) -> RolloutInput {
        let some = |v: &str| Some(v.to_owned()).filter(|v| !v.is_empty());
        RolloutInput {
            tenant: some(&form.tenant),
            provider: some(&form.provider),
            version: some(&form.version),
            target_version: form.target_version.clone(),
            wave_size: form.wave_size.trim().parse().unwrap_or(0),
        }
    }

    /// A refused plan or start as the form shows it: the input it concerns (None: above the
    /// form) and the message. Failures that are no input's to correct (not logged in, the
    /// server) are the page's.
    pub fn refusal(form: &RolloutForm, e: Error) -> Result<(Option<String>, String), AppError> {
        use crate::kept::sentence;
        use kqueen_core::ErrorKind;
        Ok(match e {
            Error::Invalid(v) if INPUTS.contains(&v.field) => {
                (Some(v.field.to_owned()), sentence(&v.message))
            }
            Error::NotFound("tenant") => (
                Some("tenant".to_owned()),
                format!("You have no tenant named “{}”.", form.tenant),
            ),
            e if matches!(
                e.public().kind,
                ErrorKind::Unauthenticated | ErrorKind::Internal
            ) =>
            {
                return Err(e.into())
            }
            e => (None, sentence(&e.public().message)),
        })
    }
}
