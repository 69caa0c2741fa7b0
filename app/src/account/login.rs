//! `/login`: single sign-on and, when enabled, break-glass local accounts.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::components::{encode_query_value, ErrorNote};

#[component]
pub fn Login() -> impl IntoView {
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_else(|| "/".into());
    let message = move || {
        let q = query.read();
        match q.get("error").as_deref() {
            Some("invalid") => Some(("error", "Invalid username or password.")),
            Some("sso") => Some(("error", "Single sign-on failed. Please try again.")),
            Some("sso-disabled") => Some(("error", "Single sign-on is not configured.")),
            Some("local-disabled") => Some(("error", "Local accounts are disabled.")),
            Some(_) => Some(("error", "Login failed. Please try again.")),
            None if q.get("logged_out").is_some() => Some(("notice", "You have been signed out.")),
            // After an invitation's set-password page.
            None if q.get("welcome").is_some() => {
                Some(("notice", "Your password is set. Sign in with it."))
            }
            None => None,
        }
    };
    let options = crate::hydrated::resource(|| (), |_| crate::account::sfn::get_login_options());
    view! {
        <Title text="Sign in" />
        <section class="card login">
            <h1>"Sign in to KQueen"</h1>
            {move || message().map(|(class, text)| view! { <p class=class role="status" id="login-message">{text}</p> })}
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match options.await {
                        Ok(o) => {
                            let sso_href = format!("/auth/login?next={}", encode_query_value(&next()));
                            view! {
                                {o.sso.then(|| view! {
                                    <a class="button" id="sso-login" href=sso_href rel="external">"Sign in with single sign-on"</a>
                                })}
                                {o.local_accounts.then(|| view! {
                                    <form method="post" action="/auth/local" class="stack" id="local-login">
                                        <input type="hidden" name="next" value=next() />
                                        <label for="username">"Username"</label>
                                        <input id="username" name="username" autocomplete="username" required maxlength="64"
                                            value=query.read_untracked().get("welcome").unwrap_or_default() />
                                        <label for="password">"Password"</label>
                                        <input id="password" name="password" type="password" autocomplete="current-password" required />
                                        <button type="submit">"Sign in with a local account"</button>
                                    </form>
                                })}
                                {(!o.sso && !o.local_accounts).then(|| view! {
                                    <p class="error">"No login method is enabled. Ask your operator."</p>
                                })}
                            }.into_any()
                        }
                        Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
