//! `/addons`: the addon catalog (KQueen's built-in addons and operators' own versions); for
//! operators a form adding a version and a confirmed delete of their own versions.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::addons::actions::{DefineAddon, UndefineAddon, DEFINE_FORM};
use crate::addons::dto::CatalogDto;
use crate::components::{
    confirming, confirming_name, described_by, invalid, ConfirmStep, ErrorNote, FieldError,
    FormError, KeptFormError, TableHead,
};
use crate::kept::{error_at, value_or, KeptForm};

#[component]
pub fn AddonCatalog() -> impl IntoView {
    let define = ServerAction::<DefineAddon>::new();
    let undefine = ServerAction::<UndefineAddon>::new();
    let page = crate::hydrated::resource(
        move || (define.version().get(), undefine.version().get()),
        |_| crate::addons::sfn::addon_catalog_page(),
    );
    view! {
        <Title text="Addons" />
        <h1>"Addon catalog"</h1>
        <FormError />
        <ConfirmUndefine undefine />
        <Transition fallback=|| view! { <p class="muted">"Loading the catalog…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Catalog page=p define /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Catalog(page: CatalogDto, define: ServerAction<DefineAddon>) -> impl IntoView {
    let can_manage = page.can_manage;
    view! {
        <section class="card" aria-labelledby="catalog-heading">
            <div class="card-head"><h2 id="catalog-heading">{format!("{} addon version(s)", page.definitions.len())}</h2></div>
            <div class="table-scroll">
                <table class="table" id="addon-catalog">
                    <TableHead cols=vec!["Addon", "Version", "Namespace", "Parameters", "Needs", ""] />
                    <tbody>
                        {page.definitions.into_iter().map(|d| {
                            let delete = format!(
                                "/addons?confirm=undefine&name={}&version={}",
                                crate::query::encode_query_value(&d.name),
                                crate::query::encode_query_value(&d.version)
                            );
                            let id = format!("addon-{}-{}-delete", d.name, d.version);
                            view! {
                                <tr data-addon=d.name.clone() data-version=d.version.clone() data-builtin=d.builtin.to_string()>
                                    <th scope="row">{d.name.clone()}<br /><small class="muted">{d.description.clone()}</small></th>
                                    <td>{d.version.clone()}
                                        {d.builtin.then(|| view! { " " <span class="badge addon-builtin">"built-in"</span> })}</td>
                                    <td><code>{d.namespace.clone()}</code></td>
                                    <td>{d.parameters.iter().map(|p| format!("{} ({})", p.name, p.kind)).collect::<Vec<_>>().join(", ")}</td>
                                    <td>{d.requires.join(", ")}</td>
                                    <td>{(can_manage && !d.builtin).then(|| view! {
                                        <a class="danger" href=delete id=id>"Delete…"</a>
                                    })}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        {can_manage.then(|| view! { <DefineForm kept=KeptForm::of(&page.kept, DEFINE_FORM) define /> })}
    }
}

/// One labelled input of the define form: id `addon-def-<name>`, the error at it.
#[component]
fn DefField(
    name: &'static str,
    label: &'static str,
    kept: Option<KeptForm>,
    #[prop(default = "")] help: &'static str,
    #[prop(default = false)] multiline: bool,
    #[prop(default = false)] required: bool,
) -> impl IntoView {
    let id = format!("addon-def-{name}");
    let help_id = format!("{id}-help");
    let error = error_at(&kept, name);
    let described = described_by(&id, (!help.is_empty()).then_some(help_id.as_str()), &error);
    let value = value_or(&kept, name, "");
    let input = if multiline {
        view! {
            <textarea id=id.clone() name=name rows=if name == "manifests" { "12" } else { "4" } required=required spellcheck="false"
                aria-describedby=described aria-invalid=invalid(&error)>{value}</textarea>
        }
        .into_any()
    } else {
        view! {
            <input id=id.clone() name=name value=value required=required autocomplete="off"
                aria-describedby=described aria-invalid=invalid(&error) />
        }
        .into_any()
    };
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            {input}
            <FieldError input=id error />
            {(!help.is_empty()).then(|| view! { <small id=help_id class="muted">{help}</small> })}
        </div>
    }
}

#[component]
fn DefineForm(kept: Option<KeptForm>, define: ServerAction<DefineAddon>) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="define-heading">
            <div class="card-head"><h2 id="define-heading">"Add an addon version"</h2></div>
            <KeptFormError kept=kept.clone() />
            <ActionForm action=define attr:class="stack" attr:id=DEFINE_FORM>
                <DefField name="name" label="Name" kept=kept.clone() required=true help="Lowercase letters, digits and '-'." />
                <DefField name="version" label="Version" kept=kept.clone() required=true help="e.g. 1.2.0" />
                <DefField name="description" label="Description" kept=kept.clone() />
                <DefField name="namespace" label="Namespace" kept=kept.clone() required=true help="Where its namespaced objects go unless they name one." />
                <DefField name="parameters" label="Parameters (JSON)" kept=kept.clone() multiline=true
                    help=r#"A list such as [{"name": "replicas", "type": "integer", "default": "1", "min": 1, "max": 3}]; types: string, integer, boolean, enum."# />
                <DefField name="health" label="Health workloads" kept=kept.clone() multiline=true
                    help="One \"Kind namespace/name\" a line (Deployment, DaemonSet or StatefulSet) that must be available." />
                <DefField name="requires" label="Needs" kept=kept.clone() help="Addons that must be installed first, separated by commas." />
                <DefField name="manifests" label="Manifests" kept=kept.clone() multiline=true required=true
                    help="Multi-document YAML; ${parameter} placeholders are replaced by the parameters' values." />
                <button type="submit" id="addon-def-submit">"Add to the catalog"</button>
            </ActionForm>
        </section>
    }
}

/// The delete's confirmation (`?confirm=undefine&name=<addon>&version=<version>`).
#[component]
fn ConfirmUndefine(undefine: ServerAction<UndefineAddon>) -> impl IntoView {
    let (confirm, which) = (confirming(), confirming_name());
    let query = use_query_map();
    move || {
        let name = which
            .get()
            .filter(|_| confirm.get().as_deref() == Some("undefine"))?;
        let version = query.read().get("version").unwrap_or_default();
        Some(view! {
            <ConfirmStep id="confirm-addon-undefine" title=format!("Delete {name} {version} from the catalog?") cancel="/addons".to_owned()>
                <p>"Clusters can no longer install this version. A version that a cluster runs cannot be deleted."</p>
                <ActionForm action=undefine attr:id="addon-undefine-form">
                    <input type="hidden" name="name" value=name.clone() />
                    <input type="hidden" name="version" value=version.clone() />
                    <button type="submit" class="danger" id="confirm-addon-undefine-submit">"Delete"</button>
                </ActionForm>
            </ConfirmStep>
        })
    }
}
