//! The app shell around every page: the header with the product navigation and the user menu.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_location;

use crate::account::dto::MeDto;
use crate::components::{encode_query_value, ErrorNote};
use crate::AppError;

/// Header with the product navigation and the user menu around the page. Visitors who are
/// not logged in are sent to the login page (server-side redirect, or client-side when
/// hydrated).
#[component]
pub fn AppShell(children: Children) -> impl IntoView {
    // Effects run only in the browser, after hydration: `data-hydrated` tells scripts, tests
    // and styles whether the page is interactive yet.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let location = use_location();
    // Pages for people who are not signed in: the login page, and the one where an invited
    // person sets their password.
    let on_login_page = move || {
        let path = location.pathname.get();
        path == "/login" || path.starts_with("/invite/")
    };
    let me = crate::hydrated::resource(|| (), |_| crate::account::sfn::me());
    // A client-side navigation keeps the shell, and so an open menu (phones): close it when
    // the page changes, as a full page load would.
    let menu = NodeRef::<leptos::html::Details>::new();
    Effect::new(move |_| {
        location.pathname.track();
        if let Some(menu) = menu.get_untracked() {
            menu.set_open(false);
        }
    });
    // The pages read who is signed in from here (e.g. the fleet tabs) instead of asking again.
    provide_context(Me(me));
    let login_path = move || {
        let here = format!("{}{}", location.pathname.get(), location.search.get());
        format!("/login?next={}", encode_query_value(&here))
    };
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="topbar">
            <A href="/" attr:class="brand">
                <img src="/favicon.svg" alt="" width="28" height="28" />
                <span>"KQueen"</span>
            </A>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match me.await {
                        // On narrow screens the bar collapses into this menu (style/main.css);
                        // a <details> opens and closes without JavaScript.
                        Ok(Some(user)) => view! {
                            <details class="menu" id="menu" node_ref=menu>
                                <summary>"Menu"</summary>
                                <div class="menu-items"><Nav user /></div>
                            </details>
                        }
                        .into_any(),
                        Ok(None) if on_login_page() => ().into_any(),
                        Ok(None) => view! { <GoTo path=login_path() /> }.into_any(),
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Suspense>
        </header>
        <main id="main" data-hydrated=move || hydrated.get().to_string()>
            {children()}
        </main>
        <footer class="footer">"KQueen — multi-cloud Kubernetes cluster manager"</footer>
    }
}

/// Who is signed in (None: nobody), as the app shell loaded it; in context for the pages.
#[derive(Clone, Copy)]
pub struct Me(pub crate::hydrated::PageResource<Result<Option<MeDto>, AppError>>);

/// Navigation and user menu for a logged-in user: only the areas the user may use.
///
/// Plain `<a>` elements: this renders inside a suspended view outside the routes, where
/// `<A>` has no route to resolve against; the router still navigates them client-side.
#[component]
fn Nav(user: MeDto) -> impl IntoView {
    let who = user
        .display_name
        .clone()
        .unwrap_or_else(|| user.username.clone());
    view! {
        <nav aria-label="Main">
            <ul>
                <li><NavLink href="/clusters" label="Clusters" /></li>
                {user.operator.then(|| view! { <li><NavLink href="/providers" label="Providers" /></li> })}
                {user.operator.then(|| view! { <li><NavLink href="/addons" label="Addons" /></li> })}
                {if user.can_audit {
                    // Operators and tenant admins: the dashboard.
                    Some(view! { <li><NavLink href="/fleet" label="Fleet" /></li> }.into_any())
                } else if !user.tenants.is_empty() {
                    // Members may not see the dashboard, only the fleet queries.
                    Some(view! { <li><NavLink href="/fleet/images" section="/fleet" label="Fleet" /></li> }.into_any())
                } else {
                    None
                }}
                {user.can_audit.then(|| view! { <li><NavLink href="/backups" label="Backups" /></li> })}
                {user.can_audit.then(|| view! { <li><NavLink href="/approvals" label="Approvals" /></li> })}
                {user.can_audit.then(|| view! { <li><NavLink href="/rollouts" label="Rollouts" /></li> })}
                {user.can_audit.then(|| view! { <li><NavLink href="/audit" label="Audit" /></li> })}
                {user.operator.then(|| view! { <li><NavLink href="/admin" label="Admin" /></li> })}
            </ul>
        </nav>
        <div class="user-menu">
            <span class="user-name" id="user-name" title=user.username.clone()>{who}</span>
            {user.operator.then(|| view! { <span class="badge badge-operator">"operator"</span> })}
            <NavLink href="/tokens" label="API tokens" />
            <form method="post" action="/auth/logout">
                <button type="submit" class="link-button" id="logout">"Sign out"</button>
            </form>
        </div>
    }
}

/// Sends the browser to `path`: an HTTP redirect when rendered on the server, a client-side
/// navigation when hydrated. (The router's `<Redirect>` needs a matched route, and the app
/// shell renders outside the routes.)
#[component]
fn GoTo(path: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    leptos_axum::redirect(&path);
    #[cfg(not(feature = "ssr"))]
    {
        let navigate = leptos_router::hooks::use_navigate();
        let target = path.clone();
        request_animation_frame(move || navigate(&target, Default::default()));
    }
    view! { <p>"Please " <a href=path>"sign in"</a> "."</p> }
}

/// A link that marks itself as the current page while the path is under `section` (default:
/// `href`).
#[component]
fn NavLink(
    href: &'static str,
    label: &'static str,
    #[prop(optional)] section: Option<&'static str>,
) -> impl IntoView {
    let location = use_location();
    let section = section.unwrap_or(href);
    // Read in place: twelve links on every page, each copying the path was a waste.
    let current = move || {
        location
            .pathname
            .with(|path| path.starts_with(section))
            .then_some("page")
    };
    view! { <a href=href aria-current=current>{label}</a> }
}
