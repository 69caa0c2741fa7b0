//! Values of forms rendered from a parameter schema (a cluster request, a provider's
//! settings, an addon's parameters): fields named `<prefix>[name]`, checkboxes included.

use std::collections::BTreeMap;

/// The values of a form's schema-rendered fields (`<prefix>[name]`) as parameters. A
/// checkbox sends nothing when unchecked: `shown` names the checkboxes the form had, and
/// each missing one counts as `false`.
pub fn form_params(
    values: Option<BTreeMap<String, String>>,
    shown: Option<BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut out = values.unwrap_or_default();
    for name in shown.unwrap_or_default().into_keys() {
        out.entry(name).or_insert_with(|| "false".to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::form_params;

    #[test]
    fn an_unchecked_checkbox_counts_as_false_and_a_checked_one_as_sent() {
        let values = BTreeMap::from([("shell".to_owned(), "true".to_owned())]);
        let shown = BTreeMap::from([
            ("shell".to_owned(), "1".to_owned()),
            ("verbose".to_owned(), "1".to_owned()),
        ]);
        let p = form_params(Some(values), Some(shown));
        assert_eq!(p["shell"], "true");
        assert_eq!(p["verbose"], "false");
        assert!(form_params(None, None).is_empty());
    }
}
