//! The YAML side of reading a manifest: a first pass over the parser's events that finds the
//! documents and refuses what would be costly or ambiguous to read (nesting, aliases and what
//! they expand to, tags, keys that are not text), then the reader's settings and its errors in
//! plain words.
//!
//! The first pass keeps no values, only counters, so a hostile upload is refused after one
//! linear walk over at most `max_bytes` of text; values are built by `serde-saphyr` afterwards
//! with the same limits as a second line of defence.

use std::collections::HashMap;

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::{ErrorKind, Event, Parser, ScalarStyle, ScanError, Tag};

use super::{at_document, clip, ManifestLimits};
use crate::ValidationError;

/// One YAML document of the upload.
#[derive(Debug, Clone, Copy)]
pub(super) struct Document {
    /// 1-based, counting empty documents too (as a person counts `---`).
    pub number: usize,
    /// The line its first event is on (1-based).
    pub line: usize,
    /// Nothing in it but comments or a null: skipped, as the YAML reader skips it.
    pub empty: bool,
}

/// The YAML 1.2 core schema's tags: the only explicit tags accepted.
const CORE_TAGS: [&str; 7] = ["str", "int", "float", "bool", "null", "map", "seq"];
const CORE_PREFIX: &str = "tag:yaml.org,2002:";

/// An open collection during the first pass.
struct Frame {
    anchor: usize,
    /// What the collection expands to: one per node plus its scalars' bytes.
    size: u64,
    mapping: bool,
    /// In a mapping: the next node is a key.
    expect_key: bool,
}

/// The first pass (see the module documentation). Returns every document, empty ones too.
pub(super) fn scan(text: &str, limits: &ManifestLimits) -> Result<Vec<Document>, ValidationError> {
    let mut options = serde_saphyr::granit_parser::Options::default();
    options.emit_comments = false;
    options.flow_nesting_limit = limits.max_depth;
    options.block_nesting_limit = limits.max_depth.saturating_add(1);

    let mut docs: Vec<Document> = Vec::new();
    let mut in_document = false;
    let mut frames: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    let mut aliases = 0usize;
    let mut expanded = 0u64;
    let mut objects = 0usize;
    let budget = limits.max_bytes as u64;

    for event in Parser::new_from_str_with_options(text, options) {
        let (event, span) = match event {
            Ok(e) => e,
            Err(e) => {
                let number = if in_document {
                    docs.len()
                } else {
                    docs.len() + 1
                };
                return Err(syntax_error(&e, number, limits));
            }
        };
        let line = span.start.line();
        let number = docs.len();
        let refuse = |message: String| at_document(number, &format!("{message} (line {line})"));
        // A node (scalar, alias or collection start) at this point: check its place.
        let node_at_key = frames.last().is_some_and(|f| f.mapping && f.expect_key);
        match event {
            Event::DocumentStart(..) => {
                in_document = true;
                docs.push(Document {
                    number: docs.len() + 1,
                    line,
                    empty: false,
                });
                anchors.clear();
                continue;
            }
            Event::DocumentEnd => {
                in_document = false;
                continue;
            }
            Event::Scalar(ref value, style, anchor, ref tag) => {
                if let Some(tag) = tag.as_deref() {
                    check_tag(tag).map_err(refuse)?;
                }
                let nullish = style == ScalarStyle::Plain
                    && tag.is_none()
                    && (value.is_empty() || value == "~" || value.eq_ignore_ascii_case("null"));
                if frames.is_empty() {
                    if !nullish {
                        return Err(refuse(not_an_object("a single value")));
                    }
                    if let Some(doc) = docs.last_mut() {
                        doc.empty = true;
                    }
                    continue;
                }
                if node_at_key && nullish {
                    return Err(refuse("has an empty (null) mapping key".to_owned()));
                }
                let size = value.len() as u64 + 1;
                if anchor != 0 {
                    anchors.insert(anchor, size);
                }
                add(&mut frames, size);
            }
            Event::Alias(id) => {
                if frames.is_empty() {
                    return Err(refuse(not_an_object("an alias")));
                }
                if node_at_key {
                    return Err(refuse("uses a YAML alias as a mapping key".to_owned()));
                }
                aliases += 1;
                if aliases > limits.max_aliases {
                    return Err(refuse(format!(
                        "has more than {} YAML aliases in the upload",
                        limits.max_aliases
                    )));
                }
                let Some(&size) = anchors.get(&id) else {
                    return Err(refuse(
                        "has a YAML alias to a collection that contains it".to_owned(),
                    ));
                };
                expanded = expanded.saturating_add(size);
                if expanded > budget {
                    return Err(refuse(format!(
                        "has YAML aliases that expand to more than {}",
                        bytes_in_words(limits.max_bytes)
                    )));
                }
                add(&mut frames, size);
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                let mapping = matches!(event, Event::MappingStart(..));
                if let Some(tag) = tag.as_deref() {
                    check_tag(tag).map_err(refuse)?;
                }
                if frames.is_empty() {
                    if !mapping {
                        return Err(refuse(not_an_object("a list")));
                    }
                    objects += 1;
                    if objects > limits.max_objects {
                        return Err(too_many_objects(limits));
                    }
                } else if node_at_key {
                    return Err(refuse("uses a list or mapping as a mapping key".to_owned()));
                }
                if frames.len() >= limits.max_depth {
                    return Err(refuse(too_deep(limits)));
                }
                frames.push(Frame {
                    anchor,
                    size: 1,
                    mapping,
                    expect_key: true,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = frames.pop() else { continue };
                if frame.anchor != 0 {
                    anchors.insert(frame.anchor, frame.size);
                }
                add(&mut frames, frame.size);
            }
            _ => {}
        }
    }
    Ok(docs)
}

/// Adds a finished node to the collection it is in; in a mapping, keys and values alternate.
fn add(frames: &mut [Frame], size: u64) {
    if let Some(top) = frames.last_mut() {
        top.size = top.size.saturating_add(size);
        if top.mapping {
            top.expect_key = !top.expect_key;
        }
    }
}

fn check_tag(tag: &Tag) -> Result<(), String> {
    let core = tag.handle() == CORE_PREFIX || tag.handle() == "!!";
    if core && CORE_TAGS.contains(&tag.suffix()) {
        return Ok(());
    }
    let shown = if core {
        format!("!!{}", tag.suffix())
    } else {
        format!("{}{}", tag.handle(), tag.suffix())
    };
    Err(format!(
        "uses the YAML tag {}, which is not supported (only !!str, !!int, !!float, !!bool, \
         !!null, !!map and !!seq are)",
        clip(&shown)
    ))
}

fn not_an_object(what: &str) -> String {
    format!("is {what}, not a Kubernetes object (a mapping with apiVersion, kind and metadata)")
}

pub(super) fn too_deep(limits: &ManifestLimits) -> String {
    format!("nests deeper than {} levels", limits.max_depth)
}

pub(super) fn too_many_objects(limits: &ManifestLimits) -> ValidationError {
    ValidationError::new(
        "manifests",
        format!("has more than {} objects", limits.max_objects),
    )
}

/// `1 MiB`, `64 KiB` or `1000 bytes`.
pub(super) fn bytes_in_words(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

fn syntax_error(e: &ScanError, number: usize, limits: &ManifestLimits) -> ValidationError {
    let mark = e.marker();
    let position = format!("line {}, column {}", mark.line(), mark.col() + 1);
    let message = match e.kind() {
        ErrorKind::RecursionLimitExceeded => format!("{} ({position})", too_deep(limits)),
        kind => format!(
            "is not valid YAML at {position}: {}",
            clip(&kind.to_string())
        ),
    };
    at_document(number, &message)
}

/// The YAML reader's settings for `limits`: YAML 1.2 scalars (`yes` and `on` stay text),
/// duplicate keys refused, non-finite numbers refused, and the budget of the first pass.
pub(crate) fn options(limits: &ManifestLimits) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = limits.max_depth;
    budget.flow_nesting_limit = limits.max_depth;
    budget.max_aliases = limits.max_aliases;
    // The first pass bounds what aliases expand to; the ratio heuristic would only add a
    // second, vaguer refusal of the same uploads.
    budget.enforce_alias_anchor_ratio = false;
    budget.max_documents = usize::MAX;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = limits.max_bytes.saturating_mul(2);
    options.alias_limits.max_replay_stack_depth = limits.max_depth;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::Reject;
    options.strict_booleans = true;
    // The snippet would copy the input into the error; messages are made here instead.
    options.with_snippet = false;
    options
}

/// An error of the YAML reader, said of the document it is in.
pub(super) fn read_error(
    e: &serde_saphyr::Error,
    docs: &[Document],
    limits: &ManifestLimits,
) -> ValidationError {
    let e = match e.without_snippet() {
        serde_saphyr::Error::AliasError { error, .. } => error.as_ref(),
        other => other,
    };
    let location = e.location().filter(|l| l.line() > 0);
    let line = location.map_or(0, |l| l.line() as usize);
    let number = docs
        .iter()
        .rev()
        .find(|d| d.line <= line)
        .map_or(1, |d| d.number);
    let position = location
        .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
        .unwrap_or_default();
    use serde_saphyr::Error as E;
    let what = match e {
        E::DuplicateMappingKey { key: Some(key), .. } => {
            format!("repeats the key {} in one mapping", quote(key))
        }
        E::DuplicateMappingKey { key: None, .. } => "repeats a key in one mapping".to_owned(),
        E::NonFiniteFloat { .. } => {
            "has a number that is not finite (.inf or .nan); JSON has no such numbers".to_owned()
        }
        E::ExternalMessage { source, .. }
            if matches!(
                source.as_ref(),
                serde_saphyr::ExternalMessageSource::Parser(scan)
                    if matches!(scan.kind(), ErrorKind::RecursionLimitExceeded)
            ) =>
        {
            too_deep(limits)
        }
        E::NullIntoString { .. } => "has an empty (null) mapping key".to_owned(),
        E::Budget { breach, .. } => match breach {
            BudgetBreach::Depth { .. } => too_deep(limits),
            BudgetBreach::Aliases { .. } => format!(
                "has more than {} YAML aliases in the upload",
                limits.max_aliases
            ),
            _ => "is too large or too complex to read".to_owned(),
        },
        E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => format!(
            "has YAML aliases that expand to more than {}",
            bytes_in_words(limits.max_bytes)
        ),
        E::UnknownAnchor { .. } => "has a YAML alias to an anchor it does not define".to_owned(),
        E::SerdeInvalidType { .. } | E::SerdeInvalidValue { .. } => {
            "has a value that cannot be read as JSON (a number too large, or bytes)".to_owned()
        }
        _ => "could not be read as YAML".to_owned(),
    };
    at_document(number, &format!("{what}{position}"))
}

fn quote(s: &str) -> String {
    format!("'{}'", clip(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_words() {
        assert_eq!(bytes_in_words(1024 * 1024), "1 MiB");
        assert_eq!(bytes_in_words(64 * 1024), "64 KiB");
        assert_eq!(bytes_in_words(1000), "1000 bytes");
    }
}
