//! The cluster page's "Addons" section: every addon of the catalog with its state in the
//! cluster (asked of the cluster at each read), and the toggle: an install form with the
//! addon's typed parameters, an upgrade, a confirmed removal. Hydrated, the section reads
//! itself again while an install or removal runs (and, less often, while an installed
//! addon's workloads start); without JavaScript a reload shows the new state.

use leptos::prelude::*;

use crate::addons::actions::{install_form, InstallAddon, RemoveAddon, UpgradeAddon};
use crate::addons::dto::ClusterAddonsDto;
use crate::components::{
    confirming, confirming_name, ConfirmStep, ErrorNote, KeptFormError, TableHead,
};
use crate::kept::KeptForm;
use kqueen_dto::addons::{AddonParam, ClusterAddon};

/// The section, read on its own (the cluster page's read stays as it is).
#[component]
pub fn ClusterAddons(
    cluster_id: String,
    /// The caller may change this cluster.
    can_manage: bool,
    /// Addons change in Ready clusters only.
    ready: bool,
) -> impl IntoView {
    let writes = AddonWrites::new();
    // Bumped every 2 s while an operation runs; every 10 s while workloads start.
    let tick = RwSignal::new(0u32);
    let pace = RwSignal::new(Pace::Settled);
    let id = cluster_id.clone();
    let addons = crate::hydrated::resource(
        move || (id.clone(), tick.get(), writes.version()),
        |(id, _, _)| crate::addons::sfn::cluster_addons(id),
    );
    Effect::new(move |_| {
        let beats = std::cell::Cell::new(0u32);
        if let Ok(handle) = set_interval_with_handle(
            move || {
                beats.set(beats.get().wrapping_add(1));
                let due = match pace.get_untracked() {
                    Pace::Operation => true,
                    Pace::Starting => beats.get().is_multiple_of(5),
                    Pace::Settled => false,
                };
                if due {
                    tick.update(|t| *t += 1);
                }
            },
            std::time::Duration::from_secs(2),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <section class="card" aria-labelledby="addons-heading" id="addons">
            <div class="card-head"><h2 id="addons-heading">"Addons"</h2></div>
            <ConfirmRemove cluster_id=cluster_id.clone() can_manage remove=writes.remove />
            <Transition fallback=|| view! { <p class="muted">"Asking the cluster…"</p> }>
                {move || {
                    let cluster_id = cluster_id.clone();
                    Suspend::new(async move {
                        match addons.await {
                            Ok(a) => {
                                pace.set(if a.operation_pending() {
                                    Pace::Operation
                                } else if a.starting() {
                                    Pace::Starting
                                } else {
                                    Pace::Settled
                                });
                                view! { <AddonTable addons=a cluster_id can_change=can_manage && ready writes /> }.into_any()
                            }
                            Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                        }
                    })
                }}
            </Transition>
        </section>
    }
}

/// How often the section reads itself again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pace {
    Operation,
    Starting,
    Settled,
}

#[component]
fn AddonTable(
    addons: ClusterAddonsDto,
    cluster_id: String,
    can_change: bool,
    writes: AddonWrites,
) -> impl IntoView {
    let kept = addons.kept.clone();
    view! {
        <div class="table-scroll">
            <table class="table addon-table" id="addon-table">
                <TableHead cols=vec!["Addon", "State", "Version", ""] />
                <tbody>
                    {addons.addons.into_iter().map(|a| {
                        let kept = KeptForm::of(&kept, &install_form(&a.name));
                        view! { <AddonRow addon=a cluster_id=cluster_id.clone() can_change kept writes /> }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn AddonRow(
    addon: ClusterAddon,
    cluster_id: String,
    can_change: bool,
    kept: Option<KeptForm>,
    writes: AddonWrites,
) -> impl IntoView {
    let a = addon;
    let name = a.name.clone();
    let reason = a.reason.clone().filter(|_| {
        matches!(
            a.state.as_str(),
            "degraded" | "drifted" | "failed" | "unknown" | "installing"
        )
    });
    let id = |what: &str| format!("addon-{name}-{what}");
    let posted_name = name.clone();
    let (available_id, unmanaged_id, reason_id, installed_id) = (
        id("upgrade-available"),
        id("unmanaged"),
        id("reason"),
        id("installed"),
    );
    let (upgrade_form_id, upgrade_id, remove_id) =
        (id("upgrade-form"), id("upgrade"), id("remove"));
    let upgrade = a.upgrade_available.clone().map(|v| {
        view! { <br /><small class="addon-upgrade" id=available_id>{format!("upgrade to {v} available")}</small> }
    });
    let running = matches!(a.state.as_str(), "installing" | "removing") && a.reason.is_none();
    let actions = match a.state.as_str() {
        "present_unmanaged" => view! {
            <span class="muted addon-unmanaged" id=unmanaged_id>"present, unmanaged (installed without KQueen)"</span>
        }.into_any(),
        _ if !can_change => ().into_any(),
        _ if running => view! { <span class="muted">"In progress…"</span> }.into_any(),
        "not_installed" => view! { <InstallForm addon=a.clone() cluster_id=cluster_id.clone() kept writes /> }.into_any(),
        _ => {
            let remove = format!("/clusters/{cluster_id}?confirm=remove-addon&name={}", crate::query::encode_query_value(&name));
            let again = a.upgrade_available.clone().or_else(|| (a.state == "failed").then(|| a.version.clone()).flatten());
            let label = if a.upgrade_available.is_some() { "Upgrade to" } else { "Retry" };
            view! {
                <div class="addon-actions">
                    {again.map(|v| view! {
                        <ActionForm action=writes.upgrade attr:class="addon-inline" attr:id=upgrade_form_id>
                            <input type="hidden" name="id" value=cluster_id.clone() />
                            <input type="hidden" name="name" value=posted_name.clone() />
                            <input type="hidden" name="version" value=v.clone() />
                            <button type="submit" id=upgrade_id>{format!("{label} {v}")}</button>
                        </ActionForm>
                    })}
                    <a class="button danger" href=remove id=remove_id>"Remove…"</a>
                </div>
            }.into_any()
        }
    };
    view! {
        <tr data-addon=name.clone() data-addon-state=a.state.clone()>
            <th scope="row">
                {name.clone()}
                <br /><small class="muted">{a.description.clone()}</small>
                {(!a.requires.is_empty()).then(|| view! { <br /><small class="muted">{format!("needs {}", a.requires.join(", "))}</small> })}
            </th>
            <td>
                <AddonStateBadge state=a.state.clone() label=a.state_label.clone() />
                {reason.map(|r| view! { <br /><small class="addon-reason" id=reason_id>{r}</small> })}
            </td>
            <td id=installed_id>{a.version.clone().unwrap_or_else(|| "—".into())}{upgrade}</td>
            <td>{actions}</td>
        </tr>
    }
}

/// An addon's state in a cluster as a badge (`data-state`).
#[component]
pub fn AddonStateBadge(state: String, label: String) -> impl IntoView {
    view! { <span class=format!("badge addon-state addon-state-{state}") data-state=state.clone()>{label}</span> }
}

/// The install form: the version and the addon's typed parameters, as refused when kept.
#[component]
fn InstallForm(
    addon: ClusterAddon,
    cluster_id: String,
    kept: Option<KeptForm>,
    writes: AddonWrites,
) -> impl IntoView {
    let name = addon.name.clone();
    let version_id = format!("addon-{name}-version");
    let version_error = crate::kept::error_at(&kept, "version");
    let chosen = crate::kept::value_or(&kept, "version", "");
    let (form_id, install_id) = (install_form(&name), format!("addon-{name}-install"));
    view! {
        <ActionForm action=writes.install attr:class="stack addon-install" attr:id=form_id>
            <KeptFormError kept=kept.clone() />
            <input type="hidden" name="id" value=cluster_id />
            <input type="hidden" name="name" value=name.clone() />
            <div class="field">
                <label for=version_id.clone()>"Version"</label>
                <select id=version_id.clone() name="version"
                    aria-invalid=crate::components::invalid(&version_error)
                    aria-describedby=crate::components::described_by(&version_id, None, &version_error)>
                    {addon.versions.iter().map(|v| {
                        let selected = *v == chosen;
                        view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
                    }).collect_view()}
                </select>
                <crate::components::FieldError input=version_id.clone() error=version_error />
            </div>
            {addon.parameter_specs.into_iter().map(|p| {
                let input = format!("p[{}]", p.name);
                let value = kept.as_ref().and_then(|k| k.value(&input));
                let error = crate::kept::error_at(&kept, &input);
                view! { <AddonParamField addon=name.clone() param=p value error /> }
            }).collect_view()}
            <button type="submit" id=install_id.clone()>"Install"</button>
        </ActionForm>
    }
}

/// One parameter's input: integer → number with its bounds, enum → select, boolean →
/// checkbox (with `p_shown[<name>]`, so that unchecked counts as false), string → text with
/// its pattern. Id `addon-<addon>-p-<param>`.
#[component]
fn AddonParamField(
    addon: String,
    param: AddonParam,
    value: Option<String>,
    error: Option<String>,
) -> impl IntoView {
    let id = format!("addon-{addon}-p-{}", param.name);
    let name = format!("p[{}]", param.name);
    let help_id = format!("{id}-help");
    let described = crate::components::described_by(&id, Some(&help_id), &error);
    let invalid = crate::components::invalid(&error);
    let value = value.unwrap_or_else(|| param.default.clone());
    let mut help = param.description.clone();
    if let (Some(lo), Some(hi)) = (param.min, param.max) {
        help = format!("{help} ({lo}–{hi})").trim().to_owned();
    }
    // The browser's pattern is anchored already.
    let pattern = param
        .pattern
        .as_ref()
        .map(|p| p.trim_start_matches('^').trim_end_matches('$').to_owned());
    let input = match param.kind.as_str() {
        "integer" => view! {
            <input type="number" id=id.clone() name=name value=value required
                min=param.min.map(|m| m.to_string()) max=param.max.map(|m| m.to_string())
                aria-describedby=described aria-invalid=invalid />
        }
        .into_any(),
        "boolean" => view! {
            <input type="hidden" name=format!("p_shown[{}]", param.name) value="1" />
            <input type="checkbox" id=id.clone() name=name value="true" checked=value == "true"
                aria-describedby=described aria-invalid=invalid />
        }
        .into_any(),
        "enum" => view! {
            <select id=id.clone() name=name aria-describedby=described aria-invalid=invalid>
                {param.options.iter().map(|o| {
                    let selected = *o == value;
                    view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                }).collect_view()}
            </select>
        }
        .into_any(),
        _ => view! {
            <input type="text" id=id.clone() name=name value=value pattern=pattern autocomplete="off"
                spellcheck="false" aria-describedby=described aria-invalid=invalid />
        }
        .into_any(),
    };
    view! {
        <div class="field" data-param=param.name.clone()>
            <label for=id.clone()>{param.name.clone()}</label>
            {input}
            <crate::components::FieldError input=id error />
            <small id=help_id class="muted">{help}</small>
        </div>
    }
}

/// The removal's confirmation (`?confirm=remove-addon&name=<addon>`), above the table.
#[component]
fn ConfirmRemove(
    cluster_id: String,
    can_manage: bool,
    remove: ServerAction<RemoveAddon>,
) -> impl IntoView {
    let (confirm, which) = (confirming(), confirming_name());
    move || {
        let name = which
            .get()
            .filter(|_| can_manage && confirm.get().as_deref() == Some("remove-addon"))?;
        let (cluster_id, cancel) = (cluster_id.clone(), format!("/clusters/{cluster_id}"));
        let (title, submit) = (format!("Remove {name}?"), format!("Remove {name}"));
        Some(view! {
            <ConfirmStep id="confirm-addon-remove" title cancel>
                <p>"Everything KQueen applied for this addon is deleted from the cluster; nothing else is touched. Workloads that rely on it stop working."</p>
                <ActionForm action=remove attr:id="addon-remove-form">
                    <input type="hidden" name="id" value=cluster_id />
                    <input type="hidden" name="name" value=name />
                    <button type="submit" class="danger" id="confirm-addon-remove-submit">{submit}</button>
                </ActionForm>
            </ConfirmStep>
        })
    }
}

/// The section's writes; the section reads again when one ends.
#[derive(Clone, Copy)]
struct AddonWrites {
    install: ServerAction<InstallAddon>,
    upgrade: ServerAction<UpgradeAddon>,
    remove: ServerAction<RemoveAddon>,
}

impl AddonWrites {
    fn new() -> Self {
        Self {
            install: ServerAction::new(),
            upgrade: ServerAction::new(),
            remove: ServerAction::new(),
        }
    }

    fn version(&self) -> usize {
        self.install.version().get() + self.upgrade.version().get() + self.remove.version().get()
    }
}
