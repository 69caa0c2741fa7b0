//! `/invite/:token`: an invited person sets their password (no login: the one-time link is
//! the proof), then signs in with it. Unknown, used and expired links all say the same.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::components::FormError;
use crate::time::to_minute;
use crate::users::actions::AcceptInvite as Accept;
use crate::AppError;

#[component]
pub fn AcceptInvite() -> impl IntoView {
    let params = use_params_map();
    let token = move || params.read().get("token").unwrap_or_default();
    let invitation = crate::hydrated::resource(token, crate::users::sfn::invitation);
    let accept = ServerAction::<Accept>::new();
    view! {
        <Title text="Set your password" />
        // No referrer policy of its own: the browsers' default (strict-origin-when-cross-origin)
        // never sends this path, with its secret, to another site; a stricter one made them
        // send `Origin: null` with the form, which the portal's same-origin check refuses.
        <section class="card login" id="accept-invite">
            <h1>"Set your password"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match invitation.await {
                        Ok(i) => view! {
                            <p>
                                "Welcome" {i.display_name.map(|d| format!(", {d}"))} ". Choose the password of the account "
                                <strong id="invite-username">{i.username.clone()}</strong>
                                ". This link works once, until " {to_minute(&i.expires_at)} "."
                            </p>
                            <FormError />
                            <ActionForm action=accept attr:class="stack" attr:id="accept-form">
                                <input type="hidden" name="token" value=token() />
                                // Lets password managers store the new password under the right name.
                                <input type="hidden" autocomplete="username" value=i.username />
                                <label for="new-password">"Password (at least 12 characters)"</label>
                                <input id="new-password" name="password" type="password" required minlength="12"
                                    maxlength="256" autocomplete="new-password" />
                                <label for="new-password-again">"The same password again"</label>
                                <input id="new-password-again" name="password_again" type="password" required
                                    minlength="12" maxlength="256" autocomplete="new-password" />
                                <button type="submit" id="accept-submit">"Set password"</button>
                            </ActionForm>
                        }.into_any(),
                        Err(e @ AppError::NotFound(_)) => {
                            crate::not_found::status_for(&e);
                            view! {
                                <p class="error" role="alert" id="invite-invalid">
                                    "This link is unknown, was already used, or has expired. "
                                    "Ask the operator who invited you for a new one."
                                </p>
                                <p><a href="/login">"Sign in"</a></p>
                            }.into_any()
                        }
                        Err(e) => view! { <crate::components::ErrorNote error=e /> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
