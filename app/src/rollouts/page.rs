//! `/rollouts`: the "New rollout" form (with its previewed plan) and the rollouts the caller
//! may see, newest first, each with its scope, state, wave and progress.

use kqueen_dto::rollouts::Rollout;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::actions::StartRollout;
use super::plan::{NewRollout, PlanPreview};
use super::progress::{ProgressBar, RolloutStateBadge};
use crate::components::{ErrorNote, FormError, ListCard, TableHead};
use crate::time::to_minute_utc;

#[component]
pub fn Rollouts() -> impl IntoView {
    let query = use_query_map();
    let start = ServerAction::<StartRollout>::new();
    let page = crate::hydrated::resource(
        move || {
            let q = query.read();
            let get = |k: &str| q.get(k).filter(|v| !v.is_empty());
            (
                [
                    get("tenant"),
                    get("provider"),
                    get("version"),
                    get("target_version"),
                    get("wave_size"),
                ],
                get("preview").is_some(),
                start.version().get(),
            )
        },
        |([tenant, provider, version, target, wave_size], preview, _)| {
            super::sfn::rollouts_page(tenant, provider, version, target, wave_size, preview)
        },
    );
    view! {
        <Title text="Rollouts" />
        <div class="page-head"><h1>"Rollouts"</h1></div>
        <p class="muted">"A rollout upgrades many clusters to one Kubernetes version, a few at a time: each wave starts when the one before it has ended, and the first failure pauses it until someone resumes or aborts it. Production clusters come last."</p>
        <FormError />
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => {
                        let rows = p.rollouts.clone();
                        view! {
                            <NewRollout page=p.clone() />
                            {p.plan.clone().map(|plan| view! { <PlanPreview plan form=p.form.clone() start /> })}
                            <RolloutList rows />
                        }
                        .into_any()
                    }
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The rollouts, newest first.
#[component]
fn RolloutList(rows: Vec<Rollout>) -> impl IntoView {
    let heading = format!("{} rollout(s)", rows.len());
    let empty = rows.is_empty();
    view! {
        <ListCard name="rollouts" heading empty="No rollout yet." is_empty=empty>
            <table class="table" id="rollout-list">
                <TableHead cols=vec!["Upgrade", "Scope", "State", "Wave", "Progress", "Started"] />
                <tbody>
                    {rows.into_iter().map(|r| {
                        let scope = super::scope_label(&r);
                        let wave = format!("{} of {}", r.wave, r.waves);
                        view! {
                            <tr data-rollout=r.id.clone() data-state=r.state.as_str()>
                                <th scope="row"><a href=format!("/rollouts/{}", r.id)>{format!("to {}", r.target_version)}</a></th>
                                <td class="rollout-scope">{scope}</td>
                                <td><RolloutStateBadge state=r.state /></td>
                                <td class="rollout-wave">{wave}</td>
                                <td class="rollout-progress-cell"><ProgressBar progress=r.progress id=format!("progress-{}", r.id) /></td>
                                <td>{to_minute_utc(&r.created_at)}<br /><small class="muted">{format!("by {}", r.created_by)}</small></td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </ListCard>
    }
}
