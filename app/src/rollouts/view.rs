//! `/rollouts/:id`: one rollout's state and why (paused at "wave 2 of 3: c3: …", or how it
//! ended), its progress, a table per wave (each cluster's version before, state, reason and a
//! link to its timeline), and Pause, Resume and Abort (confirmed first, `?confirm=abort`).
//! Hydrated, the page reads itself again every 2 s while the rollout moves; without
//! JavaScript a reload shows the same.

use kqueen_dto::rollouts::{RolloutCluster, RolloutClusterState, RolloutDetail, RolloutState};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::actions::{AbortRollout, PauseRollout, ResumeRollout};
use super::progress::{MemberStateBadge, ProgressBar, RolloutStateBadge};
use crate::components::{confirming, ConfirmStep, ErrorNote, FormError, TableHead};
use crate::time::to_minute_utc;

/// The page's writes; it reads itself again when one finishes.
#[derive(Clone, Copy)]
struct RolloutWrites {
    pause: ServerAction<PauseRollout>,
    resume: ServerAction<ResumeRollout>,
    abort: ServerAction<AbortRollout>,
}

impl RolloutWrites {
    fn new() -> Self {
        Self {
            pause: ServerAction::new(),
            resume: ServerAction::new(),
            abort: ServerAction::new(),
        }
    }

    fn version(&self) -> usize {
        self.pause.version().get() + self.resume.version().get() + self.abort.version().get()
    }
}

#[component]
pub fn RolloutView() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    // Bumped every 2 s while the rollout moves (in the browser, once hydrated).
    let tick = RwSignal::new(0u32);
    let moving = RwSignal::new(false);
    let writes = RolloutWrites::new();
    let page = crate::hydrated::resource(
        move || (id(), tick.get(), writes.version()),
        |(id, _, _)| super::sfn::rollout_page(id),
    );
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if moving.get_untracked() {
                    tick.update(|t| *t += 1);
                }
            },
            std::time::Duration::from_secs(2),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => {
                        moving.set(super::is_moving(&p.rollout));
                        view! { <Rollout page=p writes /> }.into_any()
                    }
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <Title text="Rollout" /> <h1>"Rollout"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn Rollout(page: RolloutDetail, writes: RolloutWrites) -> impl IntoView {
    let r = page.rollout;
    let title = format!("Upgrade to {}", r.target_version);
    let facts = format!(
        "{}; waves of {}; started {} by {}",
        super::scope_label(&r),
        r.wave_size,
        to_minute_utc(&r.created_at),
        r.created_by
    );
    let reason = r.reason.as_deref().map(crate::kept::sentence);
    let wave = match r.state {
        RolloutState::Completed => format!("All {} wave(s) ended", r.waves),
        _ => format!("Wave {} of {}", r.wave, r.waves),
    };
    let waves: Vec<(u32, Vec<RolloutCluster>)> = (1..=r.waves)
        .map(|w| {
            let of = page.clusters.iter().filter(|m| m.wave == w).cloned();
            (w, of.collect())
        })
        .collect();
    let base = format!("/rollouts/{}", r.id);
    let (open, moving) = (super::is_open(&r), super::is_moving(&r));
    let waiting = r.progress.waiting;
    view! {
        <Title text=title.clone() />
        <div class="page-head">
            <h1>{title.clone()} " " <RolloutStateBadge state=r.state /></h1>
            <a href="/rollouts">"All rollouts"</a>
        </div>
        <p class="muted" id="rollout-facts">{facts}</p>
        <FormError />
        <ConfirmAbort id=r.id.clone() target=r.target_version.clone() open waiting writes />
        {reason.map(|why| view! {
            <p class=format!("rollout-reason rollout-reason-{}", r.state.as_str()) id="rollout-reason">{why}</p>
        })}
        <section class="card" aria-labelledby="rollout-progress-heading" id="rollout-progress-card">
            <div class="card-head">
                <h2 id="rollout-progress-heading">"Progress"</h2>
                <span id="rollout-wave">{wave}</span>
            </div>
            <ProgressBar progress=r.progress id="rollout-progress" />
            {moving.then(|| view! { <p class="muted">"This page updates by itself while the rollout runs; a reload shows the same."</p> })}
            {open.then(|| view! { <Actions id=r.id.clone() state=r.state base writes /> })}
        </section>
        {waves.into_iter().map(|(w, members)| view! { <Wave wave=w of=r.waves members /> }).collect_view()}
    }
}

/// Pause (running), Resume (paused), and the link to Abort's confirmation.
#[component]
fn Actions(id: String, state: RolloutState, base: String, writes: RolloutWrites) -> impl IntoView {
    let running = state == RolloutState::Running;
    view! {
        <div class="actions" id="rollout-actions">
            {if running {
                view! {
                    <ActionForm action=writes.pause attr:id="pause-form">
                        <input type="hidden" name="id" value=id.clone() />
                        <button type="submit" id="pause-rollout">"Pause"</button>
                    </ActionForm>
                }.into_any()
            } else {
                view! {
                    <ActionForm action=writes.resume attr:id="resume-form">
                        <input type="hidden" name="id" value=id.clone() />
                        <button type="submit" id="resume-rollout">"Resume"</button>
                    </ActionForm>
                }.into_any()
            }}
            <a class="button danger" href=format!("{base}?confirm=abort") id="abort-rollout">"Abort…"</a>
        </div>
    }
}

/// The confirmation of an abort (`?confirm=abort`), above the page.
#[component]
fn ConfirmAbort(
    id: String,
    target: String,
    /// Running or paused: it can be aborted.
    open: bool,
    waiting: u32,
    writes: RolloutWrites,
) -> impl IntoView {
    let confirm = confirming();
    let cancel = format!("/rollouts/{id}");
    move || {
        let (id, target, cancel) = (id.clone(), target.clone(), cancel.clone());
        (open && confirm.get().as_deref() == Some("abort")).then(|| {
            view! {
                <ConfirmStep id="confirm-abort" title=format!("Abort the upgrade to {target}?") cancel=cancel>
                    <p>{format!("Upgrades under way finish; the {waiting} cluster(s) still waiting are skipped. An aborted rollout cannot be resumed.")}</p>
                    <ActionForm action=writes.abort attr:id="abort-form">
                        <input type="hidden" name="id" value=id />
                        <button type="submit" class="danger" id="confirm-abort-submit">"Abort rollout"</button>
                    </ActionForm>
                </ConfirmStep>
            }
        })
    }
}

/// One wave: whether it waits, is under way or ended, and its clusters.
#[component]
fn Wave(wave: u32, of: u32, members: Vec<RolloutCluster>) -> impl IntoView {
    use RolloutClusterState as S;
    let ended = |m: &RolloutCluster| matches!(m.state, S::Upgraded | S::Failed | S::Skipped);
    let status = if members.iter().all(ended) {
        "ended"
    } else if members.iter().all(|m| m.state == S::Waiting) {
        "waiting"
    } else {
        "under way"
    };
    let heading = format!("wave-{wave}-heading");
    view! {
        <section class="card" aria-labelledby=heading id=format!("wave-{wave}") data-wave=wave data-wave-state=status>
            <div class="card-head">
                <h2 id=heading.clone()>{format!("Wave {wave} of {of}")}</h2>
                <span class="muted wave-status">{status}</span>
            </div>
            <table class="table rollout-wave-table">
                <TableHead cols=vec!["Cluster", "Tenant", "From", "State", "Reason", ""] />
                <tbody>
                    {members.into_iter().map(|m| view! {
                        <tr data-cluster=m.cluster.clone() data-state=m.state.as_str()>
                            <th scope="row"><a href=format!("/clusters/{}", m.cluster_id)>{m.cluster.clone()}</a></th>
                            <td>{m.tenant.clone()}</td>
                            <td>{m.from_version.clone()}</td>
                            <td><MemberStateBadge state=m.state /></td>
                            <td class="member-reason">{m.reason.clone().map(|r| crate::kept::sentence(&r))}</td>
                            <td>{m.operation.is_some().then(|| view! {
                                <a class="member-timeline" href=format!("/clusters/{}#timeline", m.cluster_id)>"Timeline"</a>
                            })}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
