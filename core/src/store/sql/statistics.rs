//! Planner statistics kept fresh by KQueen itself: PostgreSQL plans the hot queries
//! (clusters, operations, inventory) from table statistics, and with autovacuum off or slow a
//! bulk import leaves them describing empty tables, so every lookup became a sequential scan
//! (measured at 10,000 clusters: 300 req/s for one cluster's API instead of 3,000). SQLite
//! gets `PRAGMA optimize`, its recommended periodic upkeep.

use super::{Pool, SqlStore};
use crate::Result;

/// A table is analysed again once this many rows changed, plus a tenth of its rows.
const BASE_CHANGES: i64 = 500;

/// `ANALYZE` for a table name read from the catalog (quoted, in case).
fn analyze_statement(table: &str) -> String {
    format!("ANALYZE \"{}\"", table.replace('"', "\"\""))
}

/// True when `changed` rows since the last ANALYZE make a table of `live` rows due.
fn due(live: i64, changed: i64) -> bool {
    changed >= BASE_CHANGES + live / 10
}

impl SqlStore {
    /// Analyses every table of KQueen's schema whose rows changed enough since its last
    /// ANALYZE (autovacuum's own rule, applied even when autovacuum is off); returns their
    /// names. On SQLite runs `PRAGMA optimize` and returns none.
    pub(super) async fn refresh_planner_statistics(&self) -> Result<Vec<String>> {
        match &self.pool {
            Pool::Sqlite(p) => {
                sqlx::query("PRAGMA optimize").execute(p).await?;
                Ok(Vec::new())
            }
            Pool::Postgres(p) => {
                // Only tables this role owns (or may act for): ANALYZE of any other only
                // warns, and it would be "analysed" again every minute.
                const SQL: &str = "SELECT s.relname::text, s.n_live_tup, s.n_mod_since_analyze \
                     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid \
                     WHERE s.schemaname = current_schema() AND pg_has_role(c.relowner, 'USAGE') \
                     ORDER BY s.relname";
                let tables: Vec<(String, i64, i64)> = sqlx::query_as(SQL).fetch_all(p).await?;
                let mut analysed = Vec::new();
                for (table, live, changed) in tables {
                    if due(live, changed) {
                        sqlx::query(&analyze_statement(&table)).execute(p).await?;
                        analysed.push(table);
                    }
                }
                Ok(analysed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_due_after_a_base_plus_a_tenth_of_their_rows() {
        assert!(!due(0, 499));
        assert!(due(0, 500));
        assert!(!due(10_000, 1_499));
        assert!(due(10_000, 1_500));
    }

    #[test]
    fn table_names_are_quoted() {
        assert_eq!(analyze_statement("clusters"), "ANALYZE \"clusters\"");
        assert_eq!(analyze_statement("a\"b"), "ANALYZE \"a\"\"b\"");
    }
}
