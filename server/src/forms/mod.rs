//! Form routes of the portal's pages: plain HTML form posts that change something, then
//! redirect back (post/redirect/get), so they work with and without JavaScript. Errors come
//! back as `?error=<message>` and the page shows them above the form.

mod clusters;
mod people;

use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use kqueen_core::Error;

use crate::escape::query_escape;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(people::router())
        .merge(clusters::router())
}

/// Back to `page`, or to the login page, or to `page` with the error's message.
pub(crate) fn back(page: &str, result: Result<(), Error>) -> Response {
    match result {
        Ok(()) => Redirect::to(page).into_response(),
        Err(Error::Unauthenticated) => {
            Redirect::to(&format!("/login?next={}", query_escape(page))).into_response()
        }
        Err(e) => {
            let message = e.public().message;
            let sep = if page.contains('?') { '&' } else { '?' };
            Redirect::to(&format!("{page}{sep}error={}", query_escape(&message))).into_response()
        }
    }
}
