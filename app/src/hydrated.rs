//! Page data as the hydration script carries it.
//!
//! The server draws charts as SVG into the page's HTML. Hydration leaves an element's
//! `inner_html` as the server sent it, so the script that hands a page's data to the browser
//! need not carry those charts a second time: on the fleet dashboard they were more than half
//! of the page, escaped twice (JSON, then a script string). A page's resource holds its data
//! as [`Hydrated`]; the fields drawn into the HTML are marked
//! `#[serde(default, skip_serializing_if = "crate::hydrated::in_script")]` and are left out of
//! that script only. When the browser fetches a page's data itself (navigating, filtering,
//! polling), the server function's answer is the plain DTO, charts included, and the chart is
//! drawn from it.
//!
//! Every page resource is made with [`resource`], whose codec is [`ScriptJson`]: Leptos writes
//! each resource's data into that script as a JavaScript string literal, and JSON carried as
//! base64 needs no escaping there.

use std::cell::Cell;
use std::future::Future;

use leptos::prelude::Resource;
use leptos::server::codee::{Decoder, Encoder};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a page resource's data travels in the hydration script: its JSON, as bytes, which
/// Leptos writes as base64.
///
/// Leptos writes each resolved resource as `__RESOLVED_RESOURCES[i] = "…"`, the `Debug` form
/// of the encoded string. With Leptos' default codec that string is the JSON itself, and every
/// quote of it (two per key, two per text value) is escaped on the way, one at a time: a
/// `perf` profile of the cluster list page (`scripts/bench-pages.sh`, 2026-11-29) had 11 % of
/// the server's samples in `<str as Debug>::fmt` for that script. A binary codec's bytes are
/// carried as base64 (`leptos_server`'s `IntoEncodedString for Vec<u8>`), whose alphabet has
/// nothing to escape, so the string is copied as it is. The format stays JSON: the fields
/// [`in_script`] leaves out are read back as their defaults, as before.
pub struct ScriptJson;

impl<T: Serialize> Encoder<T> for ScriptJson {
    type Error = serde_json::Error;
    type Encoded = Vec<u8>;

    fn encode(val: &T) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(val)
    }
}

impl<T: DeserializeOwned> Decoder<T> for ScriptJson {
    type Error = serde_json::Error;
    type Encoded = [u8];

    fn decode(val: &[u8]) -> Result<T, serde_json::Error> {
        serde_json::from_slice(val)
    }
}

/// A page resource: loaded on the server, handed to the browser in the hydration script.
pub type PageResource<T> = Resource<T, ScriptJson>;

/// A page resource (as `Resource::new`, with the [`ScriptJson`] codec): `fetcher` loads it
/// for the value of `source`, again whenever that changes. The fetcher's future is boxed
/// where it is made: on the server it is the whole server function's state (the domain
/// call's and every store read's nested inside it, up to 17 KB for the fleet dashboard), which
/// Leptos otherwise moves by copying several times per page load before it first polls it.
#[track_caller]
pub fn resource<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> PageResource<T>
where
    S: Send + Sync + Clone + PartialEq + 'static,
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, move |s| Box::pin(fetcher(s)), false)
}

thread_local! {
    /// Set while a [`Hydrated`] value is being serialised on this thread.
    static IN_SCRIPT: Cell<bool> = const { Cell::new(false) };
}

/// A page's data as its resource holds it: serialised without the fields already in the HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hydrated<T>(pub T);

impl<T: Serialize> Serialize for Hydrated<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// Puts the flag back as it was, also when serialising fails or panics.
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                IN_SCRIPT.with(|f| f.set(self.0));
            }
        }
        let _restore = Restore(IN_SCRIPT.with(|f| f.replace(true)));
        self.0.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Hydrated<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Hydrated)
    }
}

/// A page's data fetched by its server function, as its resource holds it.
pub async fn fetch<T, E>(
    answer: impl std::future::Future<Output = Result<T, E>>,
) -> Result<Hydrated<T>, E> {
    answer.await.map(Hydrated)
}

/// For `skip_serializing_if`: whether a field drawn into the HTML is left out, which it is
/// while its page's data is serialised for the hydration script.
pub fn in_script<T>(_: &T) -> bool {
    IN_SCRIPT.with(Cell::get)
}

/// A table's row as the hydration script carries it: a tuple of the struct's fields in
/// their declaration order, which is a JSON array that the struct's derived decoder reads as
/// it reads an object. Object keys were about half of a list page's script (a fleet row:
/// 200 of 380 bytes), and every byte of it is serialised, base64-encoded and written again
/// as a string literal.
///
/// The form must list every field the decoder expects, in order (fields it does not need
/// may be written as their empty value); destructure the row without `..` so that a new
/// field does not compile until it is placed, and test the round trip with distinct values.
pub trait ScriptRow {
    fn script_form(&self) -> impl Serialize + '_;
}

/// `serialize_with` for a page's rows: in their [`ScriptRow::script_form`] while the
/// hydration script is written, whole otherwise (the server function's answer).
pub fn rows<T: ScriptRow + Serialize, S: Serializer>(rows: &[T], s: S) -> Result<S::Ok, S::Error> {
    if IN_SCRIPT.with(Cell::get) {
        s.collect_seq(rows.iter().map(ScriptRow::script_form))
    } else {
        rows.serialize(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Page {
        rows: Vec<String>,
        #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
        chart: String,
        inner: Option<Inner>,
    }

    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Inner {
        #[serde(default, skip_serializing_if = "crate::hydrated::in_script")]
        chart: Option<String>,
        n: u32,
    }

    fn page() -> Page {
        Page {
            rows: vec!["a".into()],
            chart: "<svg>outer</svg>".into(),
            inner: Some(Inner {
                chart: Some("<svg>inner</svg>".into()),
                n: 3,
            }),
        }
    }

    #[test]
    fn the_script_leaves_out_what_the_html_draws_at_every_depth() {
        let json = serde_json::to_string(&Ok::<_, String>(Hydrated(page()))).unwrap();
        assert!(!json.contains("svg"), "{json}");
        let back: Result<Hydrated<Page>, String> = serde_json::from_str(&json).unwrap();
        let back = back.unwrap().0;
        assert_eq!(back.rows, ["a"]);
        assert_eq!(back.chart, "");
        assert_eq!(back.inner, Some(Inner { chart: None, n: 3 }));
    }

    /// What Leptos writes into the script for `value` encoded by `Codec`, and what the
    /// browser reads back from it.
    fn through_script<Codec, T>(value: &T) -> (String, T)
    where
        Codec: Encoder<T> + Decoder<T>,
        <Codec as Encoder<T>>::Encoded: leptos::server::IntoEncodedString,
        <Codec as Decoder<T>>::Encoded: leptos::server::FromEncodedStr,
        <Codec as Encoder<T>>::Error: std::fmt::Debug,
        <Codec as Decoder<T>>::Error: std::fmt::Debug,
        <<Codec as Decoder<T>>::Encoded as leptos::server::FromEncodedStr>::DecodingError:
            std::fmt::Debug,
    {
        use leptos::server::{FromEncodedStr, IntoEncodedString};
        use std::borrow::Borrow;
        let script = Codec::encode(value).unwrap().into_encoded_string();
        let back = {
            let read = <Codec as Decoder<T>>::Encoded::from_encoded_str(&script).unwrap();
            Codec::decode(read.borrow()).unwrap()
        };
        (script, back)
    }

    #[test]
    fn the_script_form_needs_no_escaping_and_reads_back() {
        let value: Result<Hydrated<Page>, String> = Ok(Hydrated(page()));
        let (script, back) = through_script::<ScriptJson, _>(&value);
        // The string literal Leptos writes is the encoded string between quotes, unchanged.
        assert_eq!(format!("{script:?}"), format!("\"{script}\""));
        assert!(!script.contains('<'));
        let back = back.unwrap().0;
        assert_eq!(back.rows, ["a"]);
        assert_eq!(
            back.chart, "",
            "fields drawn in the HTML stay out of the script"
        );
        assert_eq!(back.inner, Some(Inner { chart: None, n: 3 }));
        // Leptos' default codec writes the JSON itself, which the literal escapes.
        let (json, _) = through_script::<leptos::server::codee::string::JsonSerdeCodec, _>(&value);
        assert_ne!(format!("{json:?}"), format!("\"{json}\""));
    }

    #[test]
    fn the_plain_answer_keeps_everything_before_and_after() {
        let plain = serde_json::to_string(&page()).unwrap();
        assert!(plain.contains("<svg>outer</svg>") && plain.contains("<svg>inner</svg>"));
        serde_json::to_string(&Hydrated(page())).unwrap();
        let after: Page = serde_json::from_str(&serde_json::to_string(&page()).unwrap()).unwrap();
        assert_eq!(
            after,
            page(),
            "the flag is put back once the script is written"
        );
    }
}
