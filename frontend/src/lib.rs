//! The wasm entry point: hydrates the server-rendered portal in the browser.
//!
//! Built for wasm32 by `scripts/build-site.sh`; the generated `pkg/kqueen.js` calls
//! [`hydrate`] once the module is loaded.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(kqueen_app::App);
}
