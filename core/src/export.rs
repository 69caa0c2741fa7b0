//! Exports: every row of a paged query (up to [`EXPORT_MAX`]), and RFC 4180 CSV written by
//! serde from one row type per export. Cells a spreadsheet would run as a formula get a
//! leading `'`.

use std::future::Future;

use serde::Serialize;

use crate::page::Page;
use crate::{Error, Result};

/// Most rows one export holds.
pub const EXPORT_MAX: usize = 10_000;

/// Pages of `fetch` until the end or [`EXPORT_MAX`] rows.
pub async fn all_pages<T, F, Fut>(mut fetch: F) -> Result<Vec<T>>
where
    F: FnMut(Page) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, u64)>>,
{
    let mut rows = Vec::new();
    let mut offset = 0u32;
    while rows.len() < EXPORT_MAX {
        let (batch, _) = fetch(Page::new(Page::MAX_LIMIT, offset)).await?;
        let done = batch.len() < Page::MAX_LIMIT as usize;
        rows.extend(batch);
        offset += Page::MAX_LIMIT;
        if done {
            break;
        }
    }
    rows.truncate(EXPORT_MAX);
    Ok(rows)
}

/// RFC 4180 CSV (CRLF line ends) of `rows`, with `header` as the header line: the row
/// type's field names, as serde writes them (checked). Fields are quoted when they hold a comma, a quote or a line break; a cell starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`.
pub fn to_csv<T: Serialize>(header: &[&str], rows: impl IntoIterator<Item = T>) -> Result<String> {
    let failed = |e: csv::Error| Error::Corrupt(format!("cannot write the export: {e}"));
    // serde writes the cells; they are read back to defuse formulas before the final write.
    let mut raw = csv::WriterBuilder::new()
        .has_headers(true)
        .from_writer(Vec::new());
    for row in rows {
        raw.serialize(row).map_err(failed)?;
    }
    let raw = raw
        .into_inner()
        .map_err(|e| Error::Corrupt(format!("cannot write the export: {e}")))?;
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    out.write_record(header).map_err(failed)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(raw.as_slice());
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(failed)?;
        if i == 0 {
            // serde's header (the row type's field names) must be the declared one, which
            // is also written when there are no rows.
            if !record.iter().eq(header.iter().copied()) {
                return Err(Error::Corrupt(format!(
                    "an export's row type does not match its header {header:?}"
                )));
            }
            continue;
        }
        out.write_record(record.iter().map(defuse))
            .map_err(failed)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| Error::Corrupt(format!("cannot write the export: {e}")))?;
    String::from_utf8(bytes).map_err(|_| Error::Corrupt("the export is not UTF-8".into()))
}

fn defuse(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Line {
        a: &'static str,
        b: Option<&'static str>,
        n: u32,
    }

    #[test]
    fn csv_quotes_defuses_and_keeps_empty_cells() {
        let csv = to_csv(
            &["a", "b", "n"],
            [
                Line {
                    a: "x,\"y\"",
                    b: None,
                    n: 3,
                },
                Line {
                    a: "=HYPERLINK(\"z\")",
                    b: Some("-1"),
                    n: 0,
                },
                Line {
                    a: "two\nlines",
                    b: Some(""),
                    n: 1,
                },
            ],
        )
        .expect("csv");
        assert!(to_csv(
            &["a", "c", "n"],
            [Line {
                a: "",
                b: None,
                n: 0
            }]
        )
        .is_err());
        assert_eq!(
            to_csv(&["a", "b", "n"], Vec::<Line>::new()).expect("csv"),
            "a,b,n\r\n"
        );
        assert_eq!(
            csv,
            "a,b,n\r\n\"x,\"\"y\"\"\",,3\r\n\"'=HYPERLINK(\"\"z\"\")\",'-1,0\r\n\"two\nlines\",,1\r\n"
        );
    }

    #[tokio::test]
    async fn exports_stop_at_the_end_or_the_limit() {
        let short = all_pages(|page| async move {
            let n = if page.offset() == 0 { 3 } else { 0 };
            Ok((vec![1u8; n], 3))
        })
        .await
        .expect("rows");
        assert_eq!(short.len(), 3);
        let long = all_pages(|_| async { Ok((vec![0u8; Page::MAX_LIMIT as usize], u64::MAX)) })
            .await
            .expect("rows");
        assert_eq!(long.len(), EXPORT_MAX);
    }
}
