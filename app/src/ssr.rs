//! What every server function needs on the server: the domain, the caller, and the
//! formatting shared by the DTOs.

use kqueen_core::{Actor, Kqueen};

use crate::AppError;

/// The domain services, provided by the server for every request.
pub fn kqueen() -> Result<Kqueen, AppError> {
    crate::context::get::<Kqueen>().ok_or_else(|| {
        tracing::error!("kqueen_core::Kqueen is missing from the request context");
        AppError::Internal
    })
}

/// A whole number typed in form field `field`, or the error said at that field.
pub fn whole(field: &'static str, typed: &str) -> Result<u32, kqueen_core::Error> {
    typed.trim().parse().map_err(|_| {
        kqueen_core::Error::Invalid(kqueen_core::ValidationError::new(
            field,
            format!("“{}” is not a whole number", typed.trim()),
        ))
    })
}

/// Who is asking: resolved by the server's identity middleware for every request.
pub fn actor() -> Actor {
    extension::<Actor>().unwrap_or_else(Actor::anonymous)
}

/// The request's session (its cookie's), put there by the session layer.
pub fn session() -> Option<tower_sessions::Session> {
    extension()
}

/// A value the server's layers put in the request's extensions, borrowed from the request's
/// parts in the context: copying the parts (as `leptos_axum::extract` does) would copy every
/// header and extension, for each server function a page runs.
fn extension<T: Clone + Send + Sync + 'static>() -> Option<T> {
    crate::context::with::<http::request::Parts, _>(|parts| parts.extensions.get::<T>().cloned())
        .flatten()
}

/// `2026-11-24 08:05 UTC`, as chrono's `%Y-%m-%d %H:%M UTC` writes it. Every list row
/// shows one or two of these: written field by field, it costs a tenth of chrono's
/// strftime, which parses its format string again for every call (4 % of the cluster
/// list page's CPU in the benchmark).
pub fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    use std::fmt::Write;
    if !(0..=9999).contains(&t.year()) {
        // chrono signs and widens such years; rare enough to take the slow path.
        return t.format("%Y-%m-%d %H:%M UTC").to_string();
    }
    let mut s = String::with_capacity(20);
    let _ = write!(
        s,
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    );
    s
}

/// Beyond this many tenants a list of choices helps no one (and weighs on every page).
pub const TENANT_CHOICES: u32 = 50;

/// The tenants a tenant filter or a form's tenant choice offers (those the caller sees: their
/// own, every tenant for operators), none when there are more than [`TENANT_CHOICES`]: the
/// filter or choice is then a field to type a tenant's slug in.
pub async fn filter_tenants(
    k: &kqueen_core::Kqueen,
    actor: &kqueen_core::Actor,
) -> Result<Option<Vec<String>>, kqueen_core::Error> {
    use kqueen_core::page::Page;
    let list = k
        .tenancy()
        .list_tenants(actor, &Default::default(), Page::new(TENANT_CHOICES + 1, 0))
        .await?;
    Ok((list.len() <= TENANT_CHOICES as usize)
        .then(|| list.into_iter().map(|t| t.slug.to_string()).collect()))
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    #[test]
    fn time_writes_what_strftime_writes() {
        for (y, mo, d, h, mi) in [
            (2026, 11, 24, 8, 5),
            (1970, 1, 1, 0, 0),
            (2000, 2, 29, 23, 59),
            (999, 12, 31, 12, 30),
            (9999, 12, 31, 23, 59),
            (10000, 1, 1, 0, 0),
            (-5, 6, 7, 8, 9),
        ] {
            let t = Utc
                .with_ymd_and_hms(y, mo, d, h, mi, 42)
                .single()
                .expect("valid date");
            assert_eq!(
                super::time(t),
                t.format("%Y-%m-%d %H:%M UTC").to_string(),
                "{y}-{mo}-{d}"
            );
        }
    }
}

/// Ends a write made through a form: to `page` on success, back to `page` with the error's
/// message as `?error=` (the page shows it above the form), or to the login page when the
/// caller is not logged in. Without JavaScript the browser follows the redirect; hydrated,
/// the router does, without reloading the page.
pub fn back(page: &str, result: Result<(), kqueen_core::Error>) {
    leptos_axum::redirect(&back_to(page, result));
}

/// Where [`back`] sends the browser.
pub fn back_to(page: &str, result: Result<(), kqueen_core::Error>) -> String {
    match result {
        Ok(()) => page.to_owned(),
        Err(kqueen_core::Error::Unauthenticated) => {
            format!("/login?next={}", crate::query::form_escape(page))
        }
        Err(e) => {
            let sep = if page.contains('?') { '&' } else { '?' };
            format!(
                "{page}{sep}error={}",
                crate::query::form_escape(&e.public().message)
            )
        }
    }
}

#[cfg(test)]
mod back_tests {
    use kqueen_core::{Error, ValidationError};

    use super::back_to;
    use crate::query::form_escape;

    #[test]
    fn success_goes_to_the_page_and_errors_come_back_with_their_message() {
        assert_eq!(back_to("/tokens", Ok(())), "/tokens");
        assert_eq!(
            back_to("/tenants/a", Err(Error::Forbidden)),
            "/tenants/a?error=permission+denied"
        );
        assert_eq!(
            back_to(
                "/p?kind=x",
                Err(ValidationError::new("name", "is empty").into())
            ),
            format!(
                "/p?kind=x&error={}",
                form_escape(
                    &Error::from(ValidationError::new("name", "is empty"))
                        .public()
                        .message
                )
            )
        );
        assert_eq!(
            back_to("/clusters/1?a=b", Err(Error::Unauthenticated)),
            "/login?next=%2Fclusters%2F1%3Fa%3Db"
        );
    }
}
