//! Upgrades in waves (rollouts) in the portal, for operators (across the fleet) and tenant
//! admins (their tenants' clusters): `/rollouts` lists them with their progress and holds the
//! "New rollout" form, whose "Preview plan" shows the waves and what is left out before
//! "Start rollout" starts it; `/rollouts/:id` follows one wave by wave, with Pause, Resume
//! and Abort (confirmed first). The waves are moved on by the core's periodic turn; these
//! pages only read and adapt its use cases.

pub mod actions;
pub mod dto;
mod page;
mod plan;
mod progress;
pub mod sfn;
mod view;

pub use page::Rollouts;
pub use view::RolloutView;

use kqueen_dto::rollouts::{Rollout, RolloutState};

use crate::query::encode_query_value;
use dto::RolloutForm;

/// The "New rollout" form's values previewed: where a refused start comes back to.
pub fn preview_path(form: &RolloutForm) -> String {
    format!(
        "/rollouts?tenant={}&provider={}&version={}&target_version={}&wave_size={}&preview=1",
        encode_query_value(&form.tenant),
        encode_query_value(&form.provider),
        encode_query_value(&form.version),
        encode_query_value(&form.target_version),
        encode_query_value(&form.wave_size),
    )
}

/// Whether it may still start upgrades (after a resume for a paused one): it can be paused,
/// resumed or aborted.
pub fn is_open(r: &Rollout) -> bool {
    matches!(r.state, RolloutState::Running | RolloutState::Paused)
}

/// Whether its page reads itself again: it runs, or upgrades it started still run.
pub fn is_moving(r: &Rollout) -> bool {
    r.state == RolloutState::Running || r.progress.upgrading > 0
}

/// Where a rollout applies, in words: "Whole fleet", "Tenant team-a", with its filters.
pub fn scope_label(row: &Rollout) -> String {
    let mut parts = vec![match &row.tenant {
        Some(t) => format!("Tenant {t}"),
        None => "Whole fleet".to_owned(),
    }];
    if let Some(p) = &row.provider {
        parts.push(format!("provider {p}"));
    }
    if let Some(v) = &row.version {
        parts.push(format!("clusters at {v}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_keeps_every_value_of_the_form() {
        let form = RolloutForm {
            tenant: "team-a".into(),
            provider: String::new(),
            version: "1.33".into(),
            target_version: "v1.34.1+k3s1".into(),
            wave_size: "2".into(),
        };
        assert_eq!(
            preview_path(&form),
            "/rollouts?tenant=team-a&provider=&version=1.33&target_version=v1.34.1%2Bk3s1&wave_size=2&preview=1"
        );
    }
}
