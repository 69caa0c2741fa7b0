//! Manifests: multi-document Kubernetes YAML pasted by people, read into objects with limits.
//!
//! The text is hostile until read. It is refused before parsing when larger than
//! [`ManifestLimits::max_bytes`]; a first pass over the parser's events then refuses deep
//! nesting, too many aliases or aliases that expand to more than `max_bytes`, tags outside the
//! YAML 1.2 core schema (`!!binary`, `!!timestamp`, `!custom`…), mapping keys that are lists,
//! mappings, aliases or null, and documents that are not mappings. Only then are values built.
//!
//! How values are read, deterministically:
//! - YAML 1.2 scalars: `true`/`false` (any case) are booleans, `yes`, `no`, `on`, `off` stay
//!   text (even under a `%YAML 1.1` directive); `0o17` and `0x1F` are integers.
//! - Numbers become JSON numbers; a float with an integral value that a double holds exactly
//!   (`1e3`, `017`) becomes an integer, as kubectl writes it; `.inf`, `.nan` and literals that
//!   overflow a double are refused.
//! - Mapping keys are text as written (`1:` is the key "1"). A key repeated in one mapping is
//!   refused, and keys that denote the same integer (`11` and `0xB`) count as repeated.
//! - Merge keys (`<<: *base`) are expanded, within the alias limits.

mod object;
mod yaml;

use std::collections::HashMap;

use serde_json::Value;

use crate::ValidationError;

/// Limits on a manifest upload.
#[derive(Debug, Clone, Copy)]
pub struct ManifestLimits {
    /// Larger texts are refused before parsing.
    pub max_bytes: usize,
    /// Most objects, after `List`s are expanded.
    pub max_objects: usize,
    /// Deepest nesting of lists and mappings (a document's top mapping is level 1). Values
    /// are built recursively, so keep this small (at most a few hundred).
    pub max_depth: usize,
    /// Most YAML aliases (`*name`) in the whole upload. What they expand to is bounded too:
    /// at most `max_bytes` more.
    pub max_aliases: usize,
}

impl Default for ManifestLimits {
    /// 1 MiB, 500 objects, 64 levels, 100 aliases.
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_objects: 500,
            max_depth: 64,
            max_aliases: 100,
        }
    }
}

/// One object of a manifest, in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestObject {
    /// 1-based number of the YAML document it came from (items of a `List` share their
    /// document's number). Empty documents count, as a person counts `---`.
    pub document: usize,
    /// `apps/v1`, `v1`.
    pub api_version: String,
    /// `Deployment`.
    pub kind: String,
    pub name: String,
    /// `metadata.namespace` as written, `None` when absent or empty.
    pub namespace: Option<String>,
    /// The whole object as JSON.
    pub object: Value,
}

impl ManifestObject {
    /// The API group: `apps` for `apps/v1`, empty for the core group (`v1`).
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// The version: `v1` for `apps/v1` and for `v1`.
    pub fn version(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or(self.api_version.as_str(), |(_, version)| version)
    }
}

/// Reads a manifest (see the module documentation). Errors name the field `manifests`, with
/// the key `document N` when they concern one document, and quote at most ~60 characters of
/// the input.
pub fn parse_manifests(
    text: &str,
    limits: &ManifestLimits,
) -> Result<Vec<ManifestObject>, ValidationError> {
    if text.len() > limits.max_bytes {
        return Err(ValidationError::new(
            "manifests",
            format!("is larger than {}", yaml::bytes_in_words(limits.max_bytes)),
        ));
    }
    let docs = yaml::scan(text, limits)?;
    let values: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml::options(limits))
        .map_err(|e| yaml::read_error(&e, &docs, limits))?;
    let numbers: Vec<usize> = docs.iter().filter(|d| !d.empty).map(|d| d.number).collect();
    if numbers.len() != values.len() {
        // The first pass and the reader disagree on what is an empty document: never
        // guess which document is which.
        return Err(ValidationError::new(
            "manifests",
            "could not be split into YAML documents",
        ));
    }

    let mut objects = Vec::new();
    let mut seen: HashMap<(String, String, Option<String>, String), usize> = HashMap::new();
    for (document, mut value) in numbers.into_iter().zip(values) {
        integral_floats_as_integers(&mut value);
        let Value::Object(fields) = value else {
            return Err(object::Place {
                document,
                ..Default::default()
            }
            .error("is not a mapping"));
        };
        for (item, fields) in expand_list(fields, document)? {
            let obj = object::check(fields, document, item)?;
            let key = (
                obj.group().to_owned(),
                obj.kind.clone(),
                obj.namespace.clone(),
                obj.name.clone(),
            );
            if let Some(first) = seen.insert(key, document) {
                let place = object::Place {
                    document,
                    item,
                    kind: Some(&obj.kind),
                    name: Some(&obj.name),
                };
                return Err(place.error(&format!(
                    "the same object (group, kind, namespace and name) is already in \
                     document {first}"
                )));
            }
            objects.push(obj);
            if objects.len() > limits.max_objects {
                return Err(yaml::too_many_objects(limits));
            }
        }
    }
    Ok(objects)
}

/// An object's fields, with its item number when it came from a `List`.
type Item = (Option<usize>, serde_json::Map<String, Value>);

/// The objects of one document: itself, or the items of a `v1` `List`.
fn expand_list(
    fields: serde_json::Map<String, Value>,
    document: usize,
) -> Result<Vec<Item>, ValidationError> {
    let is_list = fields.get("kind").and_then(Value::as_str) == Some("List")
        && fields.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if !is_list {
        return Ok(vec![(None, fields)]);
    }
    let place = object::Place {
        document,
        kind: Some("List"),
        ..Default::default()
    };
    let items = match fields.get("items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(place.error("items must be a list")),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let number = i + 1;
        let item_place = object::Place {
            item: Some(number),
            ..place
        };
        let Value::Object(fields) = item else {
            return Err(item_place.error("is not a mapping"));
        };
        if fields.get("kind").and_then(Value::as_str) == Some("List") {
            return Err(item_place.error("a List inside a List is not supported"));
        }
        out.push((Some(number), fields.clone()));
    }
    Ok(out)
}

/// `1e3` and `017` (read as floats) become integers, as kubectl's JSON has them; without an
/// explicit stack, as values nest up to the depth limit.
fn integral_floats_as_integers(value: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if n.is_f64() => {
                if let Some(f) = n.as_f64() {
                    if f.fract() == 0.0 && f.abs() <= EXACT {
                        // Exact: |f| <= 2^53 and integral.
                        #[allow(clippy::cast_possible_truncation)]
                        let i = f as i64;
                        *v = Value::from(i);
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => stack.extend(fields.values_mut()),
            _ => {}
        }
    }
}

/// An error about document `number`: key `document N`, message `document N{rest}` (`rest`
/// starts with a space and a parenthesis, or is a sentence said of the document).
fn at_document(number: usize, message: &str) -> ValidationError {
    let message = if message.starts_with('(') {
        format!("document {number} {message}")
    } else {
        format!("document {number}: {message}")
    };
    ValidationError::at("manifests", format!("document {number}"), message)
}

/// At most 60 characters of the input, on one line.
fn clip(s: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = s
        .chars()
        .take(MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  \
        namespace: shop\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      \
        - name: web\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n";
    const SERVICE: &str =
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n";
    const CONFIG_MAP: &str =
        "# settings\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata:\n  \
         debug: yes\n  level: 1e3\n";

    fn parse(text: &str) -> Result<Vec<ManifestObject>, ValidationError> {
        parse_manifests(text, &ManifestLimits::default())
    }

    /// The message of the refusal of `text`, checking the field and the document key.
    fn refusal(text: &str, document: Option<usize>) -> String {
        let err = parse(text).expect_err("refused");
        assert_eq!(err.field, "manifests");
        assert_eq!(
            err.key,
            document.map(|n| format!("document {n}")),
            "{err:?}"
        );
        err.message
    }

    fn object(kind: &str, name: &str) -> String {
        format!("apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n")
    }

    #[test]
    fn three_documents_parse_in_order_with_their_numbers() {
        let text = format!("---\n{DEPLOYMENT}---\n# nothing here\n---\n{SERVICE}---\n{CONFIG_MAP}");
        let objects = parse(&text).expect("valid");
        let got: Vec<_> = objects
            .iter()
            .map(|o| (o.document, o.kind.as_str(), o.name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "Deployment", "web"),
                (3, "Service", "web"),
                (4, "ConfigMap", "settings")
            ]
        );
        let deployment = &objects[0];
        assert_eq!((deployment.group(), deployment.version()), ("apps", "v1"));
        assert_eq!(deployment.namespace.as_deref(), Some("shop"));
        assert_eq!(deployment.object["spec"]["replicas"], 2);
        assert_eq!((objects[1].group(), objects[1].version()), ("", "v1"));
        assert_eq!(objects[1].namespace, None);
        // YAML 1.2: `yes` stays text; 1e3 is written as kubectl writes it.
        assert_eq!(objects[2].object["data"]["debug"], "yes");
        assert_eq!(objects[2].object["data"]["level"].to_string(), "1000");
    }

    #[test]
    fn scalars_follow_yaml_1_2() {
        let text = format!(
            "{}data:\n  a: on\n  b: True\n  c: 0x1F\n  d: 0.5\n  e: ~\n  f: '1'\n",
            object("ConfigMap", "c")
        );
        let data = parse(&text).expect("valid")[0].object["data"].clone();
        assert_eq!(
            data,
            serde_json::json!({"a": "on", "b": true, "c": 31, "d": 0.5, "e": null, "f": "1"})
        );
        let directive = format!(
            "%YAML 1.1\n---\n{}data: {{a: yes}}\n",
            object("ConfigMap", "c")
        );
        assert_eq!(
            parse(&directive).expect("valid")[0].object["data"]["a"],
            "yes"
        );
    }

    #[test]
    fn a_list_expands_into_its_items() {
        let text = format!(
            "{SERVICE}---\napiVersion: v1\nkind: List\nitems:\n- {}\n- {}\n",
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}",
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: b, namespace: x}}"
        );
        let objects = parse(&text).expect("valid");
        let got: Vec<_> = objects
            .iter()
            .map(|o| (o.document, o.name.as_str()))
            .collect();
        assert_eq!(got, [(1, "web"), (2, "a"), (2, "b")]);
        let bad = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: X}\n";
        assert_eq!(
            refusal(bad, Some(1)),
            "document 1 (item 1, X): metadata.name is required"
        );
        let nested = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List}\n";
        assert!(refusal(nested, Some(1)).contains("a List inside a List"));
        assert!(refusal("apiVersion: v1\nkind: List\nitems: 3\n", Some(1)).contains("items"));
        assert!(parse("apiVersion: v1\nkind: List\nitems: []\n")
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn empty_uploads_and_documents_are_skipped() {
        for text in ["", "\n", "# only a comment\n", "---\n---\n", "--- ~\n...\n"] {
            assert!(parse(text).expect("empty").is_empty(), "{text:?}");
        }
    }

    #[test]
    fn required_fields_are_refused_with_the_document_and_object() {
        let cases = [
            (
                "kind: Pod\nmetadata: {name: p}\n",
                "document 1: apiVersion is required",
            ),
            (
                "apiVersion: v1\nmetadata: {name: p}\n",
                "document 1: kind is required",
            ),
            (
                "apiVersion: 1\nkind: Pod\n",
                "document 1: apiVersion must be text",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {}\n",
                "document 1 (Pod): metadata.name is required",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: ''}\n",
                "document 1 (Pod): metadata.name is required",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: 3}\n",
                "document 1 (Pod): metadata.name must be text",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: [a]\n",
                "document 1 (Pod): metadata must be a mapping",
            ),
            (
                "apiVersion: a/b/c\nkind: Pod\n",
                "document 1 (Pod): apiVersion 'a/b/c' is not of the form group/version or version",
            ),
            (
                "apiVersion: v1\nkind: 'no such'\n",
                "document 1 (no such): kind must be letters and digits, starting with a letter",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(refusal(text, Some(1)), message, "{text:?}");
        }
        let generated =
            format!("{SERVICE}---\napiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\n");
        let message = refusal(&generated, Some(2));
        assert!(
            message.starts_with("document 2 (Pod): metadata.generateName is not supported")
                && message.contains("server-side apply"),
            "{message}"
        );
    }

    #[test]
    fn names_and_namespaces_are_checked() {
        let message = refusal(&object("Pod", "Web_1"), Some(1));
        assert!(
            message
                .starts_with("document 1 (Pod Web_1): metadata.name 'Web_1' is not a valid name"),
            "{message}"
        );
        let long = "a".repeat(254);
        let message = refusal(&object("Pod", &long), Some(1));
        assert!(message.contains("at most 253"), "{message}");
        assert!(message.len() < 400, "the name is clipped: {message}");
        parse(&object("Pod", &format!("{}.b", "a".repeat(63)))).expect("a subdomain");
        // RBAC names are path segments, as Kubernetes has them.
        let role = |name: &str| {
            format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: '{name}'\n")
        };
        parse(&role("system:aggregated-metrics-reader")).expect("an RBAC name");
        let message = refusal(&role("a/b"), Some(1));
        assert!(message.contains("without '/' or '%'"), "{message}");
        let ns = |ns: &str| format!("{}  namespace: {ns}\n", object("Pod", "p"));
        let message = refusal(&ns("a.b"), Some(1));
        assert!(
            message.starts_with("document 1 (Pod p): metadata.namespace 'a.b' is not a valid"),
            "{message}"
        );
        assert!(refusal(&ns("[x]"), Some(1)).contains("metadata.namespace must be text"));
        assert_eq!(
            parse(&ns("''")).expect("empty namespace")[0].namespace,
            None
        );
    }

    #[test]
    fn documents_that_are_not_mappings_are_refused() {
        let text = format!("{SERVICE}---\n- a\n- b\n");
        assert!(
            refusal(&text, Some(2)).starts_with("document 2: is a list, not a Kubernetes object")
        );
        assert!(refusal("just text\n", Some(1)).starts_with("document 1: is a single value"));
        assert!(refusal("--- !!str\n", Some(1)).contains("single value"));
    }

    #[test]
    fn duplicate_objects_are_refused() {
        let text = format!("{SERVICE}---\n{CONFIG_MAP}---\n{SERVICE}");
        assert_eq!(
            refusal(&text, Some(3)),
            "document 3 (Service web): the same object (group, kind, namespace and name) is \
             already in document 1"
        );
        // Another namespace, kind or group is another object.
        let other_ns = format!(
            "{SERVICE}---\n{}",
            SERVICE.replace("name: web", "name: web\n  namespace: b")
        );
        assert_eq!(parse(&other_ns).expect("two").len(), 2);
        let other_group = format!(
            "{SERVICE}---\n{}",
            SERVICE.replace("apiVersion: v1", "apiVersion: x.io/v1")
        );
        assert_eq!(parse(&other_group).expect("two").len(), 2);
    }

    #[test]
    fn too_many_objects_are_refused() {
        let limits = ManifestLimits {
            max_objects: 2,
            ..ManifestLimits::default()
        };
        let three = format!(
            "{}---\n{}---\n{}",
            object("A", "a"),
            object("B", "b"),
            object("C", "c")
        );
        let err = parse_manifests(&three, &limits).expect_err("refused");
        assert_eq!((err.field, err.key.as_deref()), ("manifests", None));
        assert_eq!(err.message, "has more than 2 objects");
        let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: A, metadata: {name: a}}\n\
                    - {apiVersion: v1, kind: B, metadata: {name: b}}\n- {apiVersion: v1, kind: C, metadata: {name: c}}\n";
        let err = parse_manifests(list, &limits).expect_err("refused");
        assert_eq!(err.message, "has more than 2 objects");
    }

    #[test]
    fn large_texts_are_refused_before_parsing() {
        let text = format!(
            "{}data:\n  a: '{}'\n",
            object("ConfigMap", "c"),
            "x".repeat(1126 * 1024)
        );
        let err = parse(&text).expect_err("refused");
        assert_eq!((err.field, err.key.as_deref()), ("manifests", None));
        assert_eq!(err.message, "is larger than 1 MiB");
    }

    #[test]
    fn billion_laughs_is_refused() {
        let mut text = format!(
            "{}data:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
            object("ConfigMap", "c")
        );
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "  l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        let message = refusal(&text, Some(1));
        assert!(
            message.contains("YAML aliases that expand to more than 1 MiB"),
            "{message}"
        );
        // One large string repeated by aliases is bounded the same way.
        let big = "x".repeat(300 * 1024);
        let text = format!(
            "{}data:\n  a: &a '{big}'\n  b: *a\n  c: *a\n  d: *a\n  e: *a\n",
            object("ConfigMap", "c")
        );
        assert!(refusal(&text, Some(1)).contains("expand to more than 1 MiB"));
    }

    #[test]
    fn a_few_aliases_are_accepted_and_many_refused() {
        let text = format!(
            "{}  labels: &labels {{app: web}}\nspec:\n  selector: *labels\n  base: &base {{a: 1}}\n  merged:\n    <<: *base\n    b: 2\n",
            object("Service", "web")
        );
        let obj = &parse(&text).expect("valid")[0].object;
        assert_eq!(obj["spec"]["selector"]["app"], "web");
        assert_eq!(obj["spec"]["merged"], serde_json::json!({"a": 1, "b": 2}));
        let many: String = (0..=100).map(|i| format!("  k{i}: *v\n")).collect();
        let text = format!("{}data:\n  v: &v x\n{many}", object("ConfigMap", "c"));
        assert!(refusal(&text, Some(1)).contains("more than 100 YAML aliases"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let block: String = (0..1000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect();
        let flow = format!("a: {}{}\n", "[".repeat(1000), "]".repeat(1000));
        let flow_maps = format!("a: {}1{}\n", "{b: ".repeat(1000), "}".repeat(1000));
        let mut mixed: String = (0..40).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        mixed.push_str(&format!(
            "{}x: {}{}\n",
            " ".repeat(40),
            "[".repeat(40),
            "]".repeat(40)
        ));
        for nested in [block, flow, flow_maps, mixed] {
            let text = format!("{SERVICE}---\n{}{nested}", object("ConfigMap", "c"));
            let message = refusal(&text, Some(2));
            assert!(message.contains("nests deeper than 64 levels"), "{message}");
        }
    }

    #[test]
    fn syntax_errors_give_the_line_and_column() {
        let text = format!("{SERVICE}---\n{}data: [1, 2\n", object("ConfigMap", "c"));
        let message = refusal(&text, Some(2));
        assert!(
            message.starts_with("document 2: is not valid YAML at line 13"),
            "{message}"
        );
        let text = format!("{SERVICE}---\napiVersion: v1\n  kind: x: y\n");
        let message = refusal(&text, Some(2));
        assert!(message.contains("line 10, column"), "{message}");
    }

    #[test]
    fn keys_tags_and_numbers_are_refused_or_read_deterministically() {
        let doc = |data: &str| format!("{}data:\n{data}", object("ConfigMap", "c"));
        let cases = [
            (
                "  a: 1\n  a: 2\n",
                "repeats the key 'a' in one mapping (line 7, column 3)",
            ),
            ("  11: a\n  0xB: b\n", "repeats the key"),
            ("  ~: a\n", "empty (null) mapping key"),
            (
                "  ? [a]\n  : b\n",
                "uses a list or mapping as a mapping key",
            ),
            (
                "  a: !!binary aGVsbG8=\n",
                "the YAML tag !!binary, which is not supported",
            ),
            ("  a: !custom x\n", "the YAML tag !custom"),
            ("  a: .inf\n", "not finite"),
            ("  a: -.Inf\n", "not finite"),
            ("  a: .NaN\n", "not finite"),
            ("  a: 1e999\n", "not finite"),
            ("  a: *nowhere\n", "not valid YAML"),
        ];
        for (data, part) in cases {
            let message = refusal(&doc(data), Some(1));
            assert!(
                message.starts_with("document 1: ") && message.contains(part),
                "{data:?}: {message}"
            );
        }
        let keys =
            parse(&doc("  1: a\n  true: b\n  '!!binary': c\n  a: !!str 2\n")).expect("valid");
        assert_eq!(
            keys[0].object["data"],
            serde_json::json!({"1": "a", "true": "b", "!!binary": "c", "a": "2"})
        );
    }

    #[test]
    fn messages_never_echo_much_input() {
        let long = "x".repeat(500);
        for text in [
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {long}}}\n"),
            format!("apiVersion: {long}\nkind: Pod\n"),
            format!(
                "{}data:\n  {long}: 1\n  {long}: 2\n",
                object("ConfigMap", "c")
            ),
            format!("{}data: !{long} x\n", object("ConfigMap", "c")),
        ] {
            let message = refusal(&text, Some(1));
            assert!(message.len() < 300, "{message}");
        }
    }

    /// YAML-ish text: fragments that exercise anchors, aliases, flow and block collections,
    /// documents, quotes and numbers.
    fn yamlish() -> impl Strategy<Value = String> {
        let fragment = prop::sample::select(vec![
            "a:",
            "b: ",
            "- ",
            "&x ",
            "*x",
            "&y ",
            "*y",
            "{",
            "}",
            "[",
            "]",
            ",",
            "---",
            "...",
            "\n",
            "\n  ",
            "  ",
            "'",
            "\"",
            "1",
            "-0.5e3",
            ".inf",
            "~",
            "null",
            "yes",
            "!!str ",
            "!!binary ",
            "? ",
            ": ",
            "#",
            "<<: ",
            "apiVersion: v1\n",
            "kind: Pod\n",
            "metadata:\n  name: p\n",
            "\t",
            "|\n  ",
            "%YAML 1.2\n",
            "\\u00e9",
            "é",
        ]);
        prop::collection::vec(fragment, 0..60).prop_map(|parts| parts.concat())
    }

    fn check_never_panics(text: &str) {
        let limits = ManifestLimits {
            max_bytes: 4096,
            max_objects: 5,
            max_depth: 8,
            max_aliases: 4,
        };
        for limits in [limits, ManifestLimits::default()] {
            if let Err(e) = parse_manifests(text, &limits) {
                assert_eq!(e.field, "manifests");
                assert!(
                    e.message.starts_with("document ") || e.key.is_none(),
                    "{e:?}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            check_never_panics(&text);
        }

        #[test]
        fn yamlish_text_never_panics(text in yamlish()) {
            check_never_panics(&text);
        }

        #[test]
        fn valid_objects_round_trip(
            names in prop::collection::vec("[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z0-9]{1,5}){0,2}", 1..5),
            namespace in prop::option::of("[a-z]([a-z0-9-]{0,10}[a-z0-9])?"),
            replicas in 0u32..1000,
        ) {
            let mut names = names;
            names.sort();
            names.dedup();
            let ns = namespace.as_deref().map(|n| format!("  namespace: '{n}'\n")).unwrap_or_default();
            let text: String = names
                .iter()
                .map(|name| format!(
                    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: '{name}'\n{ns}\
                     spec:\n  replicas: {replicas}\n  template:\n    metadata:\n      labels: \
                     {{app: '{name}'}}\n"
                ))
                .collect();
            let objects = parse(&text).expect("valid");
            prop_assert_eq!(objects.len(), names.len());
            for (i, (obj, name)) in objects.iter().zip(&names).enumerate() {
                prop_assert_eq!(obj.document, i + 1);
                prop_assert_eq!(&obj.name, name);
                prop_assert_eq!(&obj.namespace, &namespace);
                let mut metadata = serde_json::json!({"name": name});
                if let Some(n) = &namespace {
                    metadata["namespace"] = serde_json::json!(n);
                }
                prop_assert_eq!(&obj.object, &serde_json::json!({
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": metadata,
                    "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}}},
                }));
            }
        }
    }
}
