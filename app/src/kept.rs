//! What a form held when its write was refused, so that the form comes back with every value
//! as typed and the error at the field it concerns.
//!
//! A refused write keeps the posted values and the error in the caller's session (sealed by
//! the vault: a form may hold a kubeconfig or a provider's credentials) and sends the browser
//! back to the form's page; the page's read takes them out of the session, once. The same path
//! serves plain form posts (no JavaScript) and hydrated pages (the router follows the
//! redirect and the page reads again).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A refused form: its values by input name, and the error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptForm {
    /// The form's element id (`provider-form`).
    pub form: String,
    pub values: BTreeMap<String, String>,
    /// The input (by name) the error concerns, when it concerns one the form has.
    pub field: Option<String>,
    /// The error in words for the person who typed the value (no field keys, no parser
    /// details), starting with a capital letter.
    pub message: String,
}

impl KeptForm {
    /// `kept` when it belongs to the form `form`.
    pub fn of(kept: &Option<KeptForm>, form: &str) -> Option<KeptForm> {
        kept.as_ref().filter(|k| k.form == form).cloned()
    }

    /// The value the input `name` held.
    pub fn value(&self, name: &str) -> Option<String> {
        self.values.get(name).cloned()
    }

    /// The error to show at the input `name`.
    pub fn error(&self, name: &str) -> Option<String> {
        (self.field.as_deref() == Some(name)).then(|| self.message.clone())
    }

    /// The error when it concerns no input of the form (shown above it).
    pub fn form_error(&self) -> Option<String> {
        self.field.is_none().then(|| self.message.clone())
    }
}

/// The value of input `name` from a kept form, else `default`.
pub fn value_or(kept: &Option<KeptForm>, name: &str, default: impl Into<String>) -> String {
    kept.as_ref()
        .and_then(|k| k.value(name))
        .unwrap_or_else(|| default.into())
}

/// Whether checkbox `name` (value `true`) was checked in a kept form, else `default`.
pub fn checked_or(kept: &Option<KeptForm>, name: &str, default: bool) -> bool {
    match kept {
        Some(k) => k.value(name).as_deref() == Some("true"),
        None => default,
    }
}

/// The error at input `name`, if any.
pub fn error_at(kept: &Option<KeptForm>, name: &str) -> Option<String> {
    kept.as_ref().and_then(|k| k.error(name))
}

/// Which input of a form an error from the core concerns: a map-valued field's entry is the
/// input named `<prefix>[<key>]`; a plain field, the input of that name, or a schema-rendered
/// input named after it (`s[endpoints]` for an error about `endpoints`).
pub fn input_for(
    field: &str,
    key: Option<&str>,
    inputs: &BTreeMap<String, String>,
) -> Option<String> {
    let entry = |name: &str| {
        let suffix = format!("[{name}]");
        inputs.keys().find(|i| i.ends_with(&suffix)).cloned()
    };
    match key {
        Some(key) => entry(key),
        None if inputs.contains_key(field) => Some(field.to_owned()),
        None => entry(field),
    }
}

/// A message starting with a capital letter ("must be at least 1" → "Must be at least 1").
pub fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(feature = "ssr")]
pub use server::{keep, refused, take, RequestKept};

/// The refused form kept for the caller's page, once: for pages whose read has no DTO of
/// its own to carry it.
#[leptos::server(prefix = "/sfn", endpoint = "kept_form")]
pub async fn take_kept_form() -> Result<Option<KeptForm>, crate::AppError> {
    Ok(take().await)
}

#[cfg(feature = "ssr")]
mod server {
    use std::collections::BTreeMap;

    use super::{input_for, sentence, KeptForm};

    const SESSION_KEY: &str = "kq.kept_form";
    const PURPOSE: &str = "kept-form";

    /// Keeps a refused form for its page's next read. Returns false when it could not (no
    /// session: the page then shows the error without the values).
    pub async fn keep(
        form: &str,
        values: BTreeMap<String, String>,
        error: &kqueen_core::Error,
    ) -> bool {
        let kept = kept_form(form, values, error);
        let Ok(k) = crate::ssr::kqueen() else {
            return false;
        };
        let Some(session) = crate::ssr::session() else {
            tracing::warn!("no session to keep a refused form's values in");
            return false;
        };
        let Ok(json) = serde_json::to_vec(&kept) else {
            return false;
        };
        let sealed = match k.vault().seal_transient(PURPOSE, &json) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot seal a refused form's values");
                return false;
            }
        };
        match session.insert(SESSION_KEY, sealed).await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot keep a refused form's values");
                false
            }
        }
    }

    /// Ends a refused write made through a form whose page shows kept input
    /// ([`crate::kept`]): the values and the error are kept for `form`, and the browser goes
    /// back to `page`, where the error is shown at its field. Other refusals, and a session
    /// that cannot keep anything, end as [`crate::ssr::back`] does.
    pub async fn refused(
        page: &str,
        form: &str,
        values: std::collections::BTreeMap<String, String>,
        error: kqueen_core::Error,
    ) {
        if !correctable(&error, &values) || !keep(form, values, &error).await {
            return crate::ssr::back(page, Err(error));
        }
        leptos_axum::redirect(page);
    }

    /// One request's read of the kept form, provided to every request's context by the
    /// server: rendering may create a page's reader more than once (a card inside a
    /// suspended view), and the session hands the form out only once.
    #[derive(Clone, Default)]
    pub struct RequestKept(std::sync::Arc<tokio::sync::OnceCell<Option<KeptForm>>>);

    /// The refused form kept for this page, once per session (as often as this request asks).
    pub async fn take() -> Option<KeptForm> {
        match crate::context::get::<RequestKept>() {
            Some(cache) => cache.0.get_or_init(take_from_session).await.clone(),
            None => take_from_session().await,
        }
    }

    async fn take_from_session() -> Option<KeptForm> {
        let session = crate::ssr::session()?;
        let sealed: String = session.remove(SESSION_KEY).await.ok().flatten()?;
        let k = crate::ssr::kqueen().ok()?;
        let opened = k.vault().open_transient(PURPOSE, &sealed).ok()?;
        serde_json::from_slice(opened.expose()).ok()
    }

    /// Whether the caller can correct `error` in the form holding `values`: invalid input, a
    /// conflict (a name taken), or a thing named in one of its inputs that the caller has
    /// none of (a typed tenant). A refusal (not logged in, not allowed, gone) is said on the
    /// page as any other write's.
    pub(super) fn correctable(
        error: &kqueen_core::Error,
        values: &std::collections::BTreeMap<String, String>,
    ) -> bool {
        match error {
            kqueen_core::Error::Invalid(_) | kqueen_core::Error::Conflict(_) => true,
            kqueen_core::Error::NotFound(what) => values.contains_key(*what),
            _ => false,
        }
    }

    /// The kept form for `error`: a validation error names the input it concerns and says
    /// what is wrong without the field's key; a thing not found is said at the input that
    /// named it; any other error is the form's.
    pub(super) fn kept_form(
        form: &str,
        values: BTreeMap<String, String>,
        error: &kqueen_core::Error,
    ) -> KeptForm {
        let (field, message) = match error {
            kqueen_core::Error::Invalid(v) => match input_for(v.field, v.key.as_deref(), &values) {
                Some(input) => (Some(input), sentence(&v.message)),
                None => (None, sentence(&v.to_string())),
            },
            kqueen_core::Error::NotFound(what) if values.contains_key(*what) => (
                Some((*what).to_owned()),
                format!("You have no {what} named “{}”.", values[*what].trim()),
            ),
            other => (None, sentence(&other.public().message)),
        };
        KeptForm {
            form: form.to_owned(),
            values,
            field,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn inputs(names: &[&str]) -> BTreeMap<String, String> {
        names
            .iter()
            .map(|n| ((*n).to_owned(), String::new()))
            .collect()
    }

    #[test]
    fn errors_find_their_input() {
        let form = inputs(&["name", "description", "s[endpoints]", "p[node_count]"]);
        assert_eq!(input_for("name", None, &form).as_deref(), Some("name"));
        assert_eq!(
            input_for("settings", Some("endpoints"), &form).as_deref(),
            Some("s[endpoints]")
        );
        assert_eq!(
            input_for("endpoints", None, &form).as_deref(),
            Some("s[endpoints]")
        );
        assert_eq!(
            input_for("parameters", Some("node_count"), &form).as_deref(),
            Some("p[node_count]")
        );
        assert_eq!(input_for("tenant", None, &form), None);
        assert_eq!(input_for("parameters", Some("missing"), &form), None);
    }

    #[test]
    fn kept_values_and_errors_belong_to_one_form() {
        let kept = Some(KeptForm {
            form: "provider-form".into(),
            values: [("name".to_owned(), "edge".to_owned())].into(),
            field: Some("name".into()),
            message: "Must be a DNS label".into(),
        });
        assert!(KeptForm::of(&kept, "template-form").is_none());
        let mine = KeptForm::of(&kept, "provider-form");
        assert_eq!(value_or(&mine, "name", "x"), "edge");
        assert_eq!(value_or(&mine, "description", "d"), "d");
        assert_eq!(
            error_at(&mine, "name").as_deref(),
            Some("Must be a DNS label")
        );
        assert_eq!(error_at(&mine, "description"), None);
        assert!(!checked_or(&mine, "disabled", true), "unchecked when kept");
        assert!(checked_or(&None, "disabled", true));
        assert_eq!(sentence("must be at least 1"), "Must be at least 1");
        assert_eq!(sentence(""), "");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn validation_errors_are_said_at_their_field_in_plain_words() {
        use kqueen_core::{Error, ValidationError};

        let form = inputs(&["name", "p[node_count]"]);
        let kept = server::kept_form(
            "request-form",
            form.clone(),
            &ValidationError::at("parameters", "node_count", "must be at most 3").into(),
        );
        assert_eq!(kept.field.as_deref(), Some("p[node_count]"));
        assert_eq!(kept.message, "Must be at most 3");
        // An error about no input of the form keeps its field's name in the message.
        let kept = server::kept_form(
            "request-form",
            form.clone(),
            &ValidationError::new("tenant", "no such tenant").into(),
        );
        assert_eq!(
            (kept.field, kept.message.as_str()),
            (None, "Tenant: no such tenant")
        );
        let kept = server::kept_form(
            "request-form",
            form.clone(),
            &Error::Conflict("name taken".into()),
        );
        assert_eq!((kept.field, kept.message.as_str()), (None, "Name taken"));
        // A thing the form names by an input, that the caller has none of, is said there; one
        // the form does not name is no input's and not the caller's to correct.
        let mut adopt = inputs(&["tenant", "template", "name"]);
        adopt.insert("tenant".into(), " t-99 ".into());
        let missing = Error::NotFound("tenant");
        assert!(server::correctable(&missing, &adopt));
        let kept = server::kept_form("adopt-form", adopt.clone(), &missing);
        assert_eq!(kept.field.as_deref(), Some("tenant"));
        assert_eq!(kept.message, "You have no tenant named “t-99”.");
        assert!(!server::correctable(&missing, &form));
        assert!(!server::correctable(&Error::NotFound("cluster"), &adopt));
        assert!(!server::correctable(&Error::Forbidden, &adopt));
        assert!(server::correctable(&Error::Conflict("x".into()), &form));
    }
}
