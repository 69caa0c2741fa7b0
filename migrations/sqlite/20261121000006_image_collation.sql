-- Postgres switches image columns to the "C" collation here; SQLite's default (BINARY)
-- already compares byte by byte. Kept so both dialects share migration versions.
SELECT 1;
