//! The cluster page's "Autoscaling" section, read on its own: what is set, the last
//! decision, the node counts over time, and (for operators and the tenant's admins, on
//! providers that can scale) the form that turns it on, changes it or turns it off.

use kqueen_dto::autoscaling::Autoscaling;
use leptos::prelude::*;

use super::actions::{DisableAutoscaling, SetAutoscaling};
use crate::components::ErrorNote;
use crate::fleet::inventory::Chart;
use crate::time::to_minute;

#[component]
pub fn ClusterAutoscaling(cluster_id: String) -> impl IntoView {
    let set = ServerAction::<SetAutoscaling>::new();
    let off = ServerAction::<DisableAutoscaling>::new();
    let id = cluster_id.clone();
    let data = crate::hydrated::resource(
        move || (id.clone(), set.version().get() + off.version().get()),
        |(id, _)| super::sfn::cluster_autoscaling(id),
    );
    let refused = move || {
        set.value()
            .get()
            .and_then(Result::err)
            .or_else(|| off.value().get().and_then(Result::err))
            .map(|e| view! { <ErrorNote error=e /> })
    };
    view! {
        <section class="card" aria-labelledby="autoscaling-heading" id="autoscaling">
            <div class="card-head"><h2 id="autoscaling-heading">"Autoscaling"</h2></div>
            {refused}
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(d) => view! {
                            <Summary a=d.autoscaling.clone() />
                            <Chart svg=d.chart id="autoscaling-chart" />
                            <Settings a=d.autoscaling set off />
                        }.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

/// Whether it is on, with what, and the last decision.
#[component]
fn Summary(a: Autoscaling) -> impl IntoView {
    let state = match (&a.settings, a.can_scale) {
        (Some(s), _) => format!(
            "On: between {} and {} worker nodes (now {}). Pods the scheduler cannot place add \
             nodes; a node whose pods request under {}% of its CPU and memory for {} is drained \
             and removed. The tenant's node quota is never exceeded.",
            s.min_nodes,
            s.max_nodes,
            a.node_count,
            s.scale_down_utilisation,
            minutes(s.scale_down_after_secs)
        ),
        (None, true) => "Off: the node count changes only when someone scales the cluster.".into(),
        (None, false) => {
            "Off: this cluster's provider cannot scale, so it cannot be autoscaled.".into()
        }
    };
    let decision = a.last_decision.clone().map(|d| {
        let when = a
            .last_turn_at
            .as_deref()
            .map(|t| format!(" ({} UTC)", to_minute(t)))
            .unwrap_or_default();
        view! { <p id="autoscaling-decision"><strong>{format!("Last decision{when}: ")}</strong>{d}</p> }
    });
    view! {
        <p id="autoscaling-state">{state}</p>
        {decision}
    }
}

/// The form, for those who may change it on a provider that can scale.
#[component]
fn Settings(
    a: Autoscaling,
    set: ServerAction<SetAutoscaling>,
    off: ServerAction<DisableAutoscaling>,
) -> impl IntoView {
    if !(a.can_change && a.can_scale) {
        return ().into_any();
    }
    let on = a.settings.is_some();
    let (min, max, share, after) = a
        .settings
        .as_ref()
        .map(|s| {
            (
                s.min_nodes,
                s.max_nodes,
                s.scale_down_utilisation,
                s.scale_down_after_secs / 60,
            )
        })
        .unwrap_or((
            a.node_count.max(1),
            a.node_count.max(1).saturating_mul(2),
            50,
            10,
        ));
    let off_id = a.cluster_id.clone();
    view! {
        <ActionForm action=set attr:class="inline-form" attr:id="autoscaling-form">
            <input type="hidden" name="id" value=a.cluster_id.clone() />
            <label for="autoscaling-min">"Minimum nodes"</label>
            <input type="number" id="autoscaling-min" name="min_nodes" min="1" max="1000" required value=min.to_string() />
            <label for="autoscaling-max">"Maximum nodes"</label>
            <input type="number" id="autoscaling-max" name="max_nodes" min="1" max="1000" required value=max.to_string() />
            <label for="autoscaling-share">"Underused below (%)"</label>
            <input type="number" id="autoscaling-share" name="scale_down_utilisation" min="1" max="100" required value=share.to_string() />
            <label for="autoscaling-after">"for (minutes)"</label>
            <input type="number" id="autoscaling-after" name="scale_down_after_minutes" min="1" max="1440" required value=after.to_string() />
            <button type="submit" id="autoscaling-save">{if on { "Save autoscaling" } else { "Turn autoscaling on" }}</button>
        </ActionForm>
        {on.then(|| view! {
            <ActionForm action=off attr:class="inline-form" attr:id="autoscaling-off-form">
                <input type="hidden" name="id" value=off_id />
                <button type="submit" class="danger" id="autoscaling-off">"Turn autoscaling off"</button>
            </ActionForm>
        })}
    }
    .into_any()
}

/// "10 min", "90 s" (a delay set in seconds through the API).
fn minutes(secs: u32) -> String {
    if secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}
