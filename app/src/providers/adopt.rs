//! `/providers/:name/clusters` (operators): the clusters a provider's infrastructure already
//! holds (a Cluster API management cluster's Clusters), which of them KQueen has, and for each
//! other one a form that adopts it into a tenant.

use kqueen_dto::adopt::AdoptableCluster;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::components::{
    described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError, ListCard, TableHead,
    TenantPick,
};
use crate::kept::{error_at, value_or, KeptForm};
use crate::providers::adopt_sfn::{provider_clusters, AdoptCluster, AdoptionPageDto, ADOPT_FORM};

#[component]
pub fn ProviderClusters() -> impl IntoView {
    let params = use_params_map();
    let provider = move || params.read().get("name").unwrap_or_default();
    let adopt = ServerAction::<AdoptCluster>::new();
    // Read again after a refused adoption: the form comes back as it was typed.
    let page = crate::hydrated::resource(
        move || (provider(), adopt.version().get()),
        |(p, _)| provider_clusters(p),
    );
    view! {
        <Title text="Existing clusters" />
        <p><a href="/providers">"← Providers and templates"</a></p>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Existing page=p adopt /> }.into_any(),
                    Err(e) => view! { <h1>"Existing clusters"</h1><ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Existing(page: AdoptionPageDto, adopt: ServerAction<AdoptCluster>) -> impl IntoView {
    let kept = KeptForm::of(&page.kept, ADOPT_FORM);
    let AdoptionPageDto {
        provider,
        kind,
        clusters,
        unlisted,
        tenants,
        templates,
        ..
    } = page;
    let none = clusters.is_empty();
    // A refusal whose form is gone meanwhile (its cluster adopted or removed) is said above.
    let orphan = kept.as_ref().filter(|k| {
        let adopting = k.value("adopting");
        !clusters
            .iter()
            .any(|c| c.adopted_by.is_none() && adopting.as_deref() == Some(c.reference.as_str()))
    });
    let orphan = orphan
        .map(|k| view! { <p class="error" role="alert" id="form-error">{k.message.clone()}</p> });
    let waiting = clusters.iter().any(|c| c.adopted_by.is_none());
    let rows = clusters
        .iter()
        .enumerate()
        .map(|(i, c)| view! { <ClusterRow i c=c.clone() /> })
        .collect_view();
    let forms = clusters
        .into_iter()
        .enumerate()
        .filter(|(_, c)| c.adopted_by.is_none())
        .map(|(i, c)| {
            // A refused form comes back in its own row only.
            let kept = kept
                .clone()
                .filter(|k| k.value("adopting").as_deref() == Some(c.reference.as_str()));
            view! {
                <AdoptForm i c provider=provider.clone() tenants=tenants.clone()
                    templates=templates.clone() kept adopt />
            }
        })
        .collect_view();
    view! {
        <h1>{format!("Existing clusters of {provider}")}</h1>
        <p class="muted">{format!("What the provider's infrastructure ({kind}) already holds. Adopting a cluster makes it a KQueen cluster of a tenant: KQueen labels it, follows it to ready and keeps its kubeconfig; nothing is rebuilt.")}</p>
        <FormError />
        {orphan}
        {match unlisted {
            Some(why) => view! { <p class="error" role="alert" id="unlisted">{why}</p> }.into_any(),
            None => view! {
                <ListCard name="existing" heading="Clusters" empty="The provider holds no cluster." is_empty=none>
                    <table class="table" id="existing-table">
                        <TableHead cols=vec!["Reference", "Class", "Version", "Phase", "Ready", "Machines", "In KQueen"] />
                        <tbody>{rows}</tbody>
                    </table>
                </ListCard>
            }.into_any(),
        }}
        {waiting.then(|| view! {
            <section class="card" aria-labelledby="adopt-heading">
                <div class="card-head"><h2 id="adopt-heading">"Adopt"</h2></div>
                {if templates.is_empty() {
                    view! { <p class="empty">"The provider has no template yet: add one on the providers page; an adopted cluster is held to it (its scale range and versions)."</p> }.into_any()
                } else {
                    forms.into_any()
                }}
            </section>
        })}
    }
}

#[component]
fn ClusterRow(i: usize, c: AdoptableCluster) -> impl IntoView {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    let machines = match (c.control_plane_nodes, c.worker_nodes) {
        (None, None) => "–".to_owned(),
        (cp, w) => format!(
            "{} control plane, {} workers",
            cp.map_or("?".into(), |n| n.to_string()),
            w.map_or("?".into(), |n| n.to_string())
        ),
    };
    let held = match c.adopted_by {
        Some(id) => {
            view! { <a href=format!("/clusters/{id}") class="adopted">"adopted"</a> }.into_any()
        }
        None => view! { <a href=format!("#adopt-{i}")>"not yet: adopt…"</a> }.into_any(),
    };
    view! {
        <tr data-reference=c.reference.clone()>
            <td><code>{c.reference.clone()}</code></td>
            <td>{or_dash(c.class)}</td>
            <td>{or_dash(c.kubernetes_version)}</td>
            <td>{or_dash(c.phase)}</td>
            <td>{if c.ready { "yes" } else { "no" }}</td>
            <td>{machines}</td>
            <td>{held}</td>
        </tr>
    }
}

/// The adoption of one cluster (row `i`): inputs `adopt-<i>-tenant`, `-template`, `-name`.
#[component]
fn AdoptForm(
    i: usize,
    c: AdoptableCluster,
    provider: String,
    tenants: Option<Vec<String>>,
    templates: Vec<String>,
    /// This form as it was refused.
    kept: Option<KeptForm>,
    adopt: ServerAction<AdoptCluster>,
) -> impl IntoView {
    let id = |what: &str| format!("adopt-{i}-{what}");
    let (tenant_id, template_id, name_id) = (id("tenant"), id("template"), id("name"));
    let tenant = value_or(&kept, "tenant", "");
    let template = value_or(&kept, "template", "");
    let name = value_or(&kept, "name", c.name.clone());
    let (tenant_error, template_error, name_error) = (
        error_at(&kept, "tenant"),
        error_at(&kept, "template"),
        error_at(&kept, "name"),
    );
    let (reference, heading) = (c.reference.clone(), format!("Adopt {}", c.reference));
    view! {
        <div class="adopt" id=format!("adopt-{i}") data-reference=reference>
            <h3>{heading}</h3>
            <KeptFormError kept=kept.clone() />
            <ActionForm action=adopt attr:class="filter wrap" attr:id=format!("adopt-{i}-form")>
                <input type="hidden" name="provider" value=provider />
                <input type="hidden" name="adopting" value=c.reference />
                <div class="field">
                    <label for=tenant_id.clone()>"Tenant"</label>
                    <TenantPick id=tenant_id.clone() tenants selected=tenant error=tenant_error.clone() />
                    <FieldError input=tenant_id error=tenant_error />
                </div>
                <div class="field">
                    <label for=template_id.clone()>"Template"</label>
                    <select id=template_id.clone() name="template" required
                        aria-invalid=invalid(&template_error)
                        aria-describedby=described_by(&template_id, None, &template_error)>
                        {templates.into_iter().map(|t| {
                            let selected = t == template;
                            view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
                        }).collect_view()}
                    </select>
                    <FieldError input=template_id error=template_error />
                </div>
                <div class="field">
                    <label for=name_id.clone()>"Name in KQueen"</label>
                    <input id=name_id.clone() name="name" maxlength="63" value=name
                        aria-invalid=invalid(&name_error)
                        aria-describedby=described_by(&name_id, Some(&format!("{name_id}-help")), &name_error) />
                    <FieldError input=name_id.clone() error=name_error />
                    <small id=format!("{name_id}-help") class="muted">"Lowercase letters, digits and '-', unique in the tenant."</small>
                </div>
                <button type="submit" id=format!("adopt-{i}-submit")>"Adopt cluster"</button>
            </ActionForm>
        </div>
    }
}
