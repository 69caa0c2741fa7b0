//! The "New rollout" form and its preview. "Preview plan" is a GET of `/rollouts` with the
//! form's values (nothing is written: the page reads the plan, hydrated in place), so the
//! plan, or the refusal at its input, comes back with the form as typed; "Start rollout"
//! posts the previewed values ([`super::actions::start_rollout`]).

use kqueen_dto::rollouts::{RolloutCandidate, RolloutPlan};
use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use super::actions::StartRollout;
use super::dto::{RolloutForm, RolloutsPageDto};
use crate::components::{described_by, invalid, FieldError, TableHead};

/// The form's inputs: (name, element id).
const TENANT: (&str, &str) = ("tenant", "rollout-tenant");
const PROVIDER: (&str, &str) = ("provider", "rollout-provider");
const VERSION: (&str, &str) = ("version", "rollout-version");
const TARGET: (&str, &str) = ("target_version", "rollout-target");
const WAVE_SIZE: (&str, &str) = ("wave_size", "rollout-wave-size");

#[component]
pub fn NewRollout(page: RolloutsPageDto) -> impl IntoView {
    // A refused start says its error through the page's `?error=` already.
    let from_write = use_query_map().with_untracked(|q| q.get("error").is_some());
    let form_error = page.form_error().filter(|_| !from_write);
    let f = page.form.clone();
    let [tenant_e, provider_e, version_e, target_e, wave_e] =
        [TENANT, PROVIDER, VERSION, TARGET, WAVE_SIZE].map(|(name, _)| page.error_at(name));
    let tenant_field = match page.tenants.clone() {
        Some(mut tenants) => {
            // A tenant typed in the address stays chosen, and the refusal is said at it.
            if !f.tenant.is_empty() && !tenants.contains(&f.tenant) {
                tenants.push(f.tenant.clone());
            }
            view! {
                <select id=TENANT.1 name=TENANT.0 aria-invalid=invalid(&tenant_e)
                    aria-describedby=described_by(TENANT.1, None, &tenant_e)>
                    {page.fleet.then(|| view! { <option value="" selected=f.tenant.is_empty()>"Whole fleet"</option> })}
                    {tenants.into_iter().map(|t| {
                        let chosen = t == f.tenant;
                        view! { <option value=t.clone() selected=chosen>{t.clone()}</option> }
                    }).collect_view()}
                </select>
            }
            .into_any()
        }
        None => view! {
            <input id=TENANT.1 name=TENANT.0 value=f.tenant.clone() maxlength="63" autocomplete="off"
                placeholder="tenant slug (blank: whole fleet)" aria-invalid=invalid(&tenant_e)
                aria-describedby=described_by(TENANT.1, None, &tenant_e) />
        }
        .into_any(),
    };
    let mut providers = page.providers.clone();
    if !f.provider.is_empty() && !providers.contains(&f.provider) {
        providers.push(f.provider.clone());
    }
    view! {
        <section class="card" aria-labelledby="new-rollout-heading" id="new-rollout">
            <div class="card-head"><h2 id="new-rollout-heading">"New rollout"</h2></div>
            {form_error.map(|e| view! { <p class="error" role="alert" id="form-error">{e}</p> })}
            // The router's Form: hydrated, a preview reads the page again in place.
            <Form method="get" action="/rollouts" attr:id="rollout-form">
                <div class="rollout-fields">
                    <div class="field">
                        <label for=TENANT.1>"Clusters of"</label>
                        {tenant_field}
                        <FieldError input=TENANT.1.to_owned() error=tenant_e />
                    </div>
                    <div class="field">
                        <label for=PROVIDER.1>"Provider"</label>
                        <select id=PROVIDER.1 name=PROVIDER.0 aria-invalid=invalid(&provider_e)
                            aria-describedby=described_by(PROVIDER.1, None, &provider_e)>
                            <option value="" selected=f.provider.is_empty()>"Any"</option>
                            {providers.into_iter().map(|p| {
                                let chosen = p == f.provider;
                                view! { <option value=p.clone() selected=chosen>{p.clone()}</option> }
                            }).collect_view()}
                        </select>
                        <FieldError input=PROVIDER.1.to_owned() error=provider_e />
                    </div>
                    <div class="field">
                        <label for=VERSION.1>"Running version"</label>
                        <input id=VERSION.1 name=VERSION.0 value=f.version.clone() maxlength="20" autocomplete="off"
                            placeholder="any" aria-invalid=invalid(&version_e)
                            aria-describedby=described_by(VERSION.1, Some("rollout-version-help"), &version_e) />
                        <FieldError input=VERSION.1.to_owned() error=version_e />
                        <small id="rollout-version-help" class="muted">"Only clusters at this version (1.33 takes every 1.33.x)."</small>
                    </div>
                    <div class="field">
                        <label for=TARGET.1>"Target version"</label>
                        <input id=TARGET.1 name=TARGET.0 value=f.target_version.clone() maxlength="20" required
                            autocomplete="off" placeholder="1.34" aria-invalid=invalid(&target_e)
                            aria-describedby=described_by(TARGET.1, None, &target_e) />
                        <FieldError input=TARGET.1.to_owned() error=target_e />
                    </div>
                    <div class="field">
                        <label for=WAVE_SIZE.1>"Clusters per wave"</label>
                        // The server checks the range (1–100) and says it at the field.
                        <input type="number" id=WAVE_SIZE.1 name=WAVE_SIZE.0 value=f.wave_size.clone() step="1"
                            inputmode="numeric" aria-invalid=invalid(&wave_e)
                            aria-describedby=described_by(WAVE_SIZE.1, Some("rollout-wave-size-help"), &wave_e) />
                        <FieldError input=WAVE_SIZE.1.to_owned() error=wave_e />
                        <small id="rollout-wave-size-help" class="muted">"1 to 100."</small>
                    </div>
                </div>
                // Named: the router's Form sends the button too, and so does a plain form post.
                <button type="submit" name="preview" value="1" id="preview-plan">"Preview plan"</button>
            </Form>
        </section>
    }
}

/// The previewed plan: its waves, what it leaves out and why, and "Start rollout".
#[component]
pub fn PlanPreview(
    plan: RolloutPlan,
    form: RolloutForm,
    start: ServerAction<StartRollout>,
) -> impl IntoView {
    let n: usize = plan.waves.iter().map(Vec::len).sum();
    let waves = plan.waves.len();
    let summary = if n == 0 {
        format!(
            "No cluster would be upgraded to {}: {} left out.",
            form.target_version,
            plan.excluded.len()
        )
    } else {
        format!(
            "{n} cluster(s) in {waves} wave(s) of up to {}; {} left out. Production clusters come last.",
            form.wave_size,
            plan.excluded.len()
        )
    };
    view! {
        <section class="card" aria-labelledby="plan-heading" id="plan" data-clusters=n data-waves=waves>
            <div class="card-head"><h2 id="plan-heading">{format!("Plan: upgrade to {}", form.target_version)}</h2></div>
            <p id="plan-summary">{summary}</p>
            {plan.waves.into_iter().enumerate().map(|(i, wave)| {
                let heading = format!("Wave {} of {waves}", i + 1);
                view! {
                    <h3 class="plan-wave-heading">{heading}</h3>
                    <table class="table plan-wave" id=format!("plan-wave-{}", i + 1) data-wave=i + 1>
                        <TableHead cols=vec!["Cluster", "Tenant", "Version"] />
                        <tbody>{wave.into_iter().map(|c| view! { <PlanRow c /> }).collect_view()}</tbody>
                    </table>
                }
            }).collect_view()}
            {(!plan.excluded.is_empty()).then(|| view! {
                <h3 class="plan-wave-heading" id="plan-excluded-heading">"Left out"</h3>
                <table class="table" id="plan-excluded">
                    <TableHead cols=vec!["Cluster", "Tenant", "Version", "Why"] />
                    <tbody>
                        {plan.excluded.into_iter().map(|e| view! {
                            <PlanRow c=e.cluster>
                                <td class="plan-reason">{e.reason}</td>
                            </PlanRow>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
            {(n > 0).then(|| view! {
                <ActionForm action=start attr:class="filter" attr:id="start-form">
                    <input type="hidden" name="tenant" value=form.tenant.clone() />
                    <input type="hidden" name="provider" value=form.provider.clone() />
                    <input type="hidden" name="version" value=form.version.clone() />
                    <input type="hidden" name="target_version" value=form.target_version.clone() />
                    <input type="hidden" name="wave_size" value=form.wave_size.clone() />
                    <button type="submit" id="start-rollout">"Start rollout"</button>
                    <span class="muted">"The plan is made again when it starts: clusters changed since this preview are counted as they are then."</span>
                </ActionForm>
            })}
        </section>
    }
}

/// A cluster of the plan (name with its production badge, tenant, version), with more cells
/// after (`children`).
#[component]
fn PlanRow(c: RolloutCandidate, #[prop(optional)] children: Option<Children>) -> impl IntoView {
    let (name, tenant) = (c.name.clone(), c.tenant.clone());
    view! {
        <tr data-cluster=name data-tenant=tenant>
            <th scope="row">
                <a href=format!("/clusters/{}", c.id)>{c.name.clone()}</a>
                {c.production.then(|| view! { " " <span class="badge badge-production">"production"</span> })}
            </th>
            <td>{c.tenant}</td>
            <td>{c.version.unwrap_or_else(|| "unknown".to_owned())}</td>
            {children.map(|c| c())}
        </tr>
    }
}
