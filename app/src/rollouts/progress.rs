//! What both rollout pages show of a rollout: its state and its clusters' states as badges,
//! and how far it is (a bar, the percent done, and how many clusters are where).

use kqueen_dto::rollouts::{RolloutClusterState, RolloutProgress, RolloutState};
use leptos::prelude::*;

/// A rollout's state in words.
pub fn state_label(state: RolloutState) -> &'static str {
    match state {
        RolloutState::Running => "Running",
        RolloutState::Paused => "Paused",
        RolloutState::Completed => "Completed",
        RolloutState::Aborted => "Aborted",
    }
}

/// A rollout cluster's state in words.
pub fn member_label(state: RolloutClusterState) -> &'static str {
    match state {
        RolloutClusterState::Waiting => "Waiting",
        RolloutClusterState::Upgrading => "Upgrading",
        RolloutClusterState::Upgraded => "Upgraded",
        RolloutClusterState::Failed => "Failed",
        RolloutClusterState::Skipped => "Skipped",
    }
}

/// A rollout's state (`data-state` carries it for scripts and tests).
#[component]
pub fn RolloutStateBadge(state: RolloutState) -> impl IntoView {
    view! {
        <span class=format!("badge rollout-{}", state.as_str()) data-state=state.as_str()>{state_label(state)}</span>
    }
}

/// One cluster's state in a rollout.
#[component]
pub fn MemberStateBadge(state: RolloutClusterState) -> impl IntoView {
    view! {
        <span class=format!("badge rollout-member-{}", state.as_str())>{member_label(state)}</span>
    }
}

/// The clusters' counts in words: "3 upgraded · 1 failed · 0 skipped · 1 waiting", with the
/// upgrades under way when there are some.
pub fn counts(p: &RolloutProgress) -> String {
    let mut parts = vec![
        format!("{} upgraded", p.upgraded),
        format!("{} failed", p.failed),
        format!("{} skipped", p.skipped),
    ];
    if p.upgrading > 0 {
        parts.push(format!("{} upgrading", p.upgrading));
    }
    parts.push(format!("{} waiting", p.waiting));
    parts.join(" · ")
}

/// How far a rollout is: the bar, the percent of clusters whose part has ended, the counts.
/// `id` names the bar (`<id>`) and its words (`<id>-percent`, `<id>-counts`).
#[component]
pub fn ProgressBar(progress: RolloutProgress, #[prop(into)] id: String) -> impl IntoView {
    let p = progress;
    let pct = p.percent;
    view! {
        <div class="rollout-progress" data-upgraded=p.upgraded data-failed=p.failed
            data-skipped=p.skipped data-upgrading=p.upgrading data-waiting=p.waiting>
            <progress max="100" value=pct.to_string() id=id.clone() aria-label="Clusters done">{format!("{pct}%")}</progress>
            <span class="rollout-percent" id=format!("{id}-percent")>{format!("{pct}% done")}</span>
            <span class="rollout-counts muted" id=format!("{id}-counts")>{counts(&p)}</span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_every_state_and_upgrades_only_when_some_run() {
        let mut p = RolloutProgress {
            upgraded: 3,
            failed: 1,
            waiting: 1,
            total: 5,
            percent: 80,
            ..RolloutProgress::default()
        };
        assert_eq!(counts(&p), "3 upgraded · 1 failed · 0 skipped · 1 waiting");
        p.upgrading = 2;
        assert_eq!(
            counts(&p),
            "3 upgraded · 1 failed · 0 skipped · 2 upgrading · 1 waiting"
        );
        assert_eq!(state_label(RolloutState::Paused), "Paused");
        assert_eq!(member_label(RolloutClusterState::Skipped), "Skipped");
    }
}
