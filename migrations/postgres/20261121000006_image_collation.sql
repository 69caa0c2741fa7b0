-- Image references compare byte by byte ("C" collation), as on SQLite: the fleet's image
-- queries group and sort every present image, and the locale's collation made that sort
-- the slowest part of them (measured with server/benches/inventory.rs).
ALTER TABLE image_history ALTER COLUMN image TYPE TEXT COLLATE "C";
ALTER TABLE inventory_containers ALTER COLUMN image TYPE TEXT COLLATE "C";
