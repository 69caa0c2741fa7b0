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

use std::cell::Cell;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
