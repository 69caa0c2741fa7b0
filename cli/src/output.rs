//! What commands print: a table for people (columns picked per command), or the API's own
//! answer as JSON or YAML for scripts.

use std::io::Write;

use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;

use crate::error::{CliError, Result};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Json,
    Yaml,
}

/// A table column: its header and where its cell is in each row (a dotted path into the
/// row's JSON, like `finding.severity`).
#[derive(Debug, Clone, Copy)]
pub struct Column(pub &'static str, pub &'static str);

/// Prints `rows` (a list) as `format` says; tables show `columns`.
pub fn print_list(format: Format, rows: &impl Serialize, columns: &[Column]) -> Result<()> {
    let value = to_value(rows)?;
    match format {
        Format::Table => {
            let rows = value.as_array().cloned().unwrap_or_default();
            emit(&table(&rows, columns))
        }
        _ => print_value(format, &value),
    }
}

/// Prints one object: as `FIELD  value` lines in a table, else whole.
pub fn print_object(format: Format, object: &impl Serialize, fields: &[Column]) -> Result<()> {
    let value = to_value(object)?;
    match format {
        Format::Table => {
            let width = fields.iter().map(|c| c.0.len()).max().unwrap_or(0);
            let mut text = String::new();
            for Column(header, path) in fields {
                text.push_str(&format!("{header:<width$}  {}\n", cell(&value, path)));
            }
            emit(&text)
        }
        _ => print_value(format, &value),
    }
}

/// Prints a line for people (a table-format answer that is not a list).
pub fn print_line(line: &str) -> Result<()> {
    emit(&format!("{line}\n"))
}

/// Prints `value` as JSON (pretty) or YAML.
pub fn print_value(format: Format, value: &Value) -> Result<()> {
    let text = match format {
        Format::Yaml => serde_saphyr::to_string(value).map_err(|e| CliError::local("YAML", e))?,
        Format::Json | Format::Table => {
            let mut t =
                serde_json::to_string_pretty(value).map_err(|e| CliError::local("JSON", e))?;
            t.push('\n');
            t
        }
    };
    emit(&text)
}

fn to_value(v: &impl Serialize) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| CliError::local("cannot show the answer", e))
}

fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // `kqueen … | head` closes the pipe early: not an error of ours.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| CliError::local("cannot write to standard output", e)),
    }
}

/// The text of a cell: strings as they are, nothing as `-`, lists joined with commas.
pub fn cell(row: &Value, path: &str) -> String {
    let mut v = row;
    for key in path.split('.') {
        v = match v.get(key) {
            Some(next) => next,
            None => return "-".into(),
        };
    }
    scalar(v)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.replace(['\n', '\t'], " "),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", scalar(v)))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// Rows under upper-case headers, columns padded to their widest cell (in characters).
pub fn table(rows: &[Value], columns: &[Column]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| cell(row, c.1)).collect())
        .collect();
    let mut widths: Vec<usize> = columns.iter().map(|c| c.0.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &mut dyn Iterator<Item = String>| {
        let mut l = String::new();
        for (i, (text, w)) in row.zip(&widths).enumerate() {
            if i + 1 == widths.len() {
                l.push_str(&text);
            } else {
                let pad = w.saturating_sub(text.chars().count());
                l.push_str(&text);
                l.push_str(&" ".repeat(pad + 3));
            }
        }
        l.trim_end().to_owned() + "\n"
    };
    let mut out = line(&mut columns.iter().map(|c| c.0.to_uppercase()));
    for row in cells {
        out.push_str(&line(&mut row.into_iter()));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_columns_and_read_nested_cells() {
        let rows = vec![
            json!({"name": "prod", "state": "ready", "f": {"severity": "high"}, "tags": ["a", "b"]}),
            json!({"name": "a-longer-name", "state": null, "f": {}, "tags": []}),
        ];
        let cols = [
            Column("name", "name"),
            Column("state", "state"),
            Column("severity", "f.severity"),
            Column("tags", "tags"),
        ];
        let text = table(&rows, &cols);
        assert_eq!(
            text,
            "NAME            STATE   SEVERITY   TAGS\n\
             prod            ready   high       a,b\n\
             a-longer-name   -       -          -\n"
        );
    }

    #[test]
    fn cells_never_break_a_line() {
        assert_eq!(cell(&json!({"m": "a\nb\tc"}), "m"), "a b c");
        assert_eq!(cell(&json!({"n": 3, "b": true}), "n"), "3");
        assert_eq!(cell(&json!({"p": {"k": "v"}}), "p"), "k=v");
        assert_eq!(cell(&json!({}), "missing.deeper"), "-");
    }
}
