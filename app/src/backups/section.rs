//! The cluster page's "Backups" section: the form that takes one, and every backup with what
//! it holds. Hydrated, it reads itself again every 2 s while a backup is being taken;
//! without JavaScript the cluster page refreshes itself while its operation runs.

use leptos::prelude::*;

use crate::backups::actions::{DeleteBackup, RemoveBackupSchedule, SetBackupSchedule, TakeBackup};
use crate::backups::delete::{ConfirmDelete, DeleteLink};
use crate::backups::{archive_path, size_label};
use crate::components::{ErrorNote, TableHead};
use crate::time::to_minute;
use kqueen_dto::backups::{Backup, BackupContents, BackupKeySpace, BackupSchedule};

/// The section (tenant admins and operators only), read on its own.
#[component]
pub fn ClusterBackups(
    cluster_id: String,
    /// Backups are taken of Ready clusters only.
    ready: bool,
    /// A hosted cluster: its key space in the shared etcd can be copied too.
    key_space: bool,
) -> impl IntoView {
    let take = ServerAction::<TakeBackup>::new();
    let delete = ServerAction::<DeleteBackup>::new();
    let set_schedule = ServerAction::<SetBackupSchedule>::new();
    let stop_schedule = ServerAction::<RemoveBackupSchedule>::new();
    let tick = RwSignal::new(0u32);
    let running = RwSignal::new(false);
    let id = cluster_id.clone();
    let backups = crate::hydrated::resource(
        move || {
            (
                id.clone(),
                tick.get(),
                take.version().get() + delete.version().get(),
            )
        },
        |(id, _, _)| crate::backups::sfn::cluster_backups(id),
    );
    let schedule_id = cluster_id.clone();
    let schedule = crate::hydrated::resource(
        move || {
            (
                schedule_id.clone(),
                set_schedule.version().get(),
                stop_schedule.version().get(),
            )
        },
        |(id, _, _)| crate::backups::sfn::backup_schedule(id),
    );
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if running.get_untracked() {
                    tick.update(|t| *t += 1);
                }
            },
            std::time::Duration::from_secs(2),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    let form_id = cluster_id.clone();
    let refused = move || {
        take.value()
            .get()
            .and_then(Result::err)
            .or_else(|| set_schedule.value().get().and_then(Result::err))
            .or_else(|| stop_schedule.value().get().and_then(Result::err))
            .or_else(|| delete.value().get().and_then(Result::err))
            .map(|e| view! { <ErrorNote error=e /> })
    };
    let schedule_cluster = cluster_id.clone();
    let confirm_cluster = cluster_id.clone();
    view! {
        <section class="card" aria-labelledby="backups-heading" id="backups">
            <div class="card-head"><h2 id="backups-heading">"Backups"</h2></div>
            <p class="muted">
                "A backup holds every object the cluster serves, as YAML files by namespace, group and kind, without status or what the server wrote. Secrets are kept only when asked for, sealed in KQueen's vault, never in the archive."
            </p>
            {ready.then(move || view! {
                <ActionForm action=take attr:class="inline-form" attr:id="backup-form">
                    <input type="hidden" name="id" value=form_id />
                    {key_space.then(|| view! {
                        <fieldset class="backup-kind">
                            <legend>"What to copy"</legend>
                            <label class="check">
                                <input type="radio" name="kind" value="resources" id="backup-kind-resources" checked=true />
                                " Resources (every object, as YAML)"
                            </label>
                            <label class="check">
                                <input type="radio" name="kind" value="key_space" id="backup-kind-key-space" />
                                " Key space (the control plane's whole etcd key space at one revision, Secrets included, sealed in the vault; restored whole into a hosted cluster)"
                            </label>
                        </fieldset>
                    })}
                    <label class="check">
                        <input type="checkbox" name="include_secrets" value="on" id="backup-secrets" />
                        " Include Secrets (sealed in the vault)"
                    </label>
                    <label class="check">
                        <input type="checkbox" name="snapshot_volumes" value="on" id="backup-snapshots" />
                        " Snapshot volumes (a VolumeSnapshot of every claim)"
                    </label>
                    <button type="submit" id="take-backup">"Back up now"</button>
                </ActionForm>
            })}
            {refused}
            <ConfirmDelete page=format!("/clusters/{confirm_cluster}") cluster_id=Some(confirm_cluster.clone()) delete />
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let cluster_id = schedule_cluster.clone();
                    Suspend::new(async move {
                        match schedule.await {
                            Ok(s) => view! { <Schedule schedule=s cluster_id key_space set=set_schedule stop=stop_schedule /> }.into_any(),
                            Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                        }
                    })
                }}
            </Transition>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let cluster_id = cluster_id.clone();
                    Suspend::new(async move {
                        match backups.await {
                            Ok(list) => {
                                running.set(list.iter().any(|b| b.state == "running"));
                                view! { <BackupTable backups=list cluster_id /> }.into_any()
                            }
                            Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                        }
                    })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn BackupTable(backups: Vec<Backup>, cluster_id: String) -> impl IntoView {
    if backups.is_empty() {
        return view! { <p class="empty" id="backups-empty">"No backup of this cluster yet."</p> }
            .into_any();
    }
    view! {
        <div class="table-scroll">
            <table class="table" id="backup-table">
                <TableHead cols=vec!["Taken", "State", "Contents", "Size", ""] />
                <tbody>
                    {backups.into_iter().map(|b| view! { <BackupRow backup=b cluster_id=cluster_id.clone() /> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn BackupRow(backup: Backup, cluster_id: String) -> impl IntoView {
    let b = backup;
    let deletable = (b.state != "running").then(|| {
        view! { <DeleteLink page=format!("/clusters/{cluster_id}") backup=b.id.clone() /> }
    });
    let download = b.contents.is_some().then(|| {
        let href = archive_path(&cluster_id, &b.id);
        let restore = format!("/clusters/{cluster_id}/backups/{}/restore", b.id);
        view! {
            <a class="button" rel="external" href=href download="" data-download=b.id.clone()>"Download"</a>
            " "
            <a class="button" href=restore data-restore=b.id.clone()>"Restore…"</a>
        }
    });
    let state = match b.state.as_str() {
        "running" => "Being taken",
        "succeeded" => "Taken",
        "failed" => "Failed",
        _ => "Unknown",
    };
    let contents = match (&b.contents, &b.error) {
        (Some(c), _) => {
            view! { <Contents contents=c.clone() include_secrets=b.include_secrets /> }.into_any()
        }
        (None, Some(e)) => view! { <span class="error">{e.clone()}</span> }.into_any(),
        (None, None) => view! { <span class="muted">"Reading the cluster…"</span> }.into_any(),
    };
    view! {
        <tr data-backup=b.id.clone() data-backup-state=b.state.clone()>
            <td>{format!("{} UTC", to_minute(&b.created_at))}<br /><small class="muted">{format!("by {}", b.requested_by)}</small></td>
            <td><span class=format!("badge backup-state-{}", b.state)>{state}</span></td>
            <td>{contents}</td>
            <td>{b.size_bytes.map(size_label).unwrap_or_else(|| "—".into())}</td>
            <td>{download}{deletable}</td>
        </tr>
    }
}

/// What a backup holds: a key space copied, or resources with their details folded.
#[component]
pub(super) fn Contents(contents: BackupContents, include_secrets: bool) -> impl IntoView {
    if let Some(k) = &contents.key_space {
        return view! { <KeySpaceContents copy=k.clone() contents=contents.clone() /> }.into_any();
    }
    view! { <ResourceContents contents include_secrets /> }.into_any()
}

/// What a key-space backup holds: the revision, keys and bytes, and its namespaces.
#[component]
fn KeySpaceContents(copy: BackupKeySpace, contents: BackupContents) -> impl IntoView {
    let headline = format!(
        "Key space at etcd revision {}: {} key(s), {} in {} namespace(s); sealed in the vault",
        copy.revision,
        copy.keys,
        size_label(copy.bytes),
        contents.namespaces.len()
    );
    let version = contents
        .kubernetes_version
        .map(|v| format!("Kubernetes {v}"))
        .unwrap_or_default();
    view! {
        <span class="backup-headline" data-backup-kind="key_space">{headline}</span>
        <details class="backup-details">
            <summary>"What it holds"</summary>
            <p class="muted">{version}</p>
            <p>"Every key the control plane's API server wrote under its prefix in the shared etcd, read with the cluster's own etcd user (etcd lets it read nothing else). The archive lists the keys; their values, Secrets among them, are sealed in KQueen's vault. A restore replaces the key space of a hosted cluster whole."</p>
            <h3>"Namespaces"</h3>
            <ul class="backup-namespaces">
                {contents.namespaces.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
            </ul>
        </details>
    }
}

/// What a resources backup holds, with the details folded: kinds, what was left out and
/// why, volumes.
#[component]
fn ResourceContents(contents: BackupContents, include_secrets: bool) -> impl IntoView {
    let c = contents;
    let secrets = if include_secrets {
        format!("{} Secret(s) sealed in the vault", c.secrets)
    } else {
        format!("{} Secret(s) not kept (not asked for)", c.secrets_left_out)
    };
    let headline = format!(
        "{} object(s) in {} namespace(s); {secrets}",
        c.objects,
        c.namespaces.len()
    );
    let version = c
        .kubernetes_version
        .clone()
        .map(|v| format!("Kubernetes {v}"))
        .unwrap_or_default();
    view! {
        <span class="backup-headline">{headline}</span>
        <details class="backup-details">
            <summary>"What it holds"</summary>
            <p class="muted">{version}</p>
            <h3>"Kinds"</h3>
            <ul class="backup-kinds">
                {c.kinds.iter().map(|k| {
                    let name = if k.group.is_empty() { k.kind.clone() } else { format!("{}.{}", k.kind, k.group) };
                    view! { <li>{format!("{name}: {}", k.count)}</li> }
                }).collect_view()}
            </ul>
            <h3>"Left out"</h3>
            <ul class="backup-left-out">
                {c.left_out.iter().map(|l| {
                    let count = if l.count > 0 { format!(" ({})", l.count) } else { String::new() };
                    view! { <li><strong>{l.what.clone()}</strong>{format!("{count}: {}", l.reason)}</li> }
                }).collect_view()}
            </ul>
            <h3>"Volumes"</h3>
            {if c.volumes.is_empty() {
                view! { <p class="muted">"No PersistentVolume or claim."</p> }.into_any()
            } else {
                view! {
                    <ul class="backup-volumes">
                        {c.volumes.iter().map(|v| {
                            let name = match &v.namespace { Some(ns) => format!("{ns}/{}", v.name), None => v.name.clone() };
                            let facts: Vec<String> = [
                                v.size.clone(),
                                v.storage_class.clone().map(|s| format!("class {s}")),
                                v.csi_driver.clone().map(|d| format!("CSI {d}")),
                                v.bound_to.clone().map(|b| format!("bound to {b}")),
                            ].into_iter().flatten().collect();
                            view! { <li>{format!("{} {name}: {}", v.kind, facts.join(", "))}</li> }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            <p class="backup-volume-guidance">{c.volume_guidance.clone()}</p>
            {c.snapshot_note.clone().map(|n| view! { <p class="backup-snapshot-note">{n}</p> })}
            {(!c.snapshots.is_empty()).then(|| view! {
                <h3>"Volume snapshots"</h3>
                <ul class="backup-snapshots">
                    {c.snapshots.iter().map(|s| {
                        let fate = if s.created { "asked for".to_owned() } else { format!("refused: {}", s.reason.clone().unwrap_or_default()) };
                        view! { <li data-snapshot=s.name.clone()>{format!("VolumeSnapshot {}/{} of claim {}: {fate}", s.namespace, s.name, s.claim)}</li> }
                    }).collect_view()}
                </ul>
            })}
        </details>
    }
}

/// The schedule: what it is, the form that sets it, and the button that stops it.
#[component]
fn Schedule(
    schedule: Option<BackupSchedule>,
    cluster_id: String,
    /// A hosted cluster: the schedule may copy its key space.
    key_space: bool,
    set: ServerAction<SetBackupSchedule>,
    stop: ServerAction<RemoveBackupSchedule>,
) -> impl IntoView {
    let (every, keep, secrets, snapshots) = schedule
        .as_ref()
        .map(|s| (s.every_hours, s.keep, s.include_secrets, s.snapshot_volumes))
        .unwrap_or((24, 7, false, false));
    let whole = schedule.as_ref().is_some_and(|s| s.kind == "key_space");
    let stop_id = cluster_id.clone();
    let now = schedule.as_ref().map(|s| {
        let secrets = match (whole, s.include_secrets, s.snapshot_volumes) {
            (true, ..) => "copying the key space",
            (_, true, true) => "with Secrets and volume snapshots",
            (_, true, false) => "with Secrets",
            (_, false, true) => "without Secrets, with volume snapshots",
            (_, false, false) => "without Secrets",
        };
        format!(
            "Every {} h {secrets}, keeping the newest {}; next backup {} UTC.",
            s.every_hours,
            s.keep,
            to_minute(&s.next_at)
        )
    });
    view! {
        <div class="backup-schedule" id="backup-schedule">
            <h3>"Schedule"</h3>
            <p id="backup-schedule-now">{now.clone().unwrap_or_else(|| "No scheduled backups.".into())}</p>
            <ActionForm action=set attr:class="inline-form" attr:id="backup-schedule-form">
                <input type="hidden" name="id" value=cluster_id />
                <label for="schedule-every">"Every (hours)"</label>
                <input type="number" name="every_hours" id="schedule-every" min="1" max="720" required value=every.to_string() />
                <label for="schedule-keep">"Keep"</label>
                <input type="number" name="keep" id="schedule-keep" min="1" max="100" required value=keep.to_string() />
                {key_space.then(|| view! {
                    <label class="check">
                        <input type="radio" name="kind" value="resources" id="schedule-kind-resources" checked=!whole />
                        " Resources"
                    </label>
                    <label class="check">
                        <input type="radio" name="kind" value="key_space" id="schedule-kind-key-space" checked=whole />
                        " Key space"
                    </label>
                })}
                <label class="check">
                    <input type="checkbox" name="include_secrets" value="on" id="schedule-secrets" checked=secrets />
                    " With Secrets"
                </label>
                <label class="check">
                    <input type="checkbox" name="snapshot_volumes" value="on" id="schedule-snapshots" checked=snapshots />
                    " Snapshot volumes"
                </label>
                <button type="submit" id="schedule-save">"Save schedule"</button>
            </ActionForm>
            {now.is_some().then(|| view! {
                <ActionForm action=stop attr:class="inline-form" attr:id="backup-schedule-stop-form">
                    <input type="hidden" name="id" value=stop_id />
                    <button type="submit" class="danger" id="schedule-stop">"Stop the schedule"</button>
                </ActionForm>
            })}
        </div>
    }
}
