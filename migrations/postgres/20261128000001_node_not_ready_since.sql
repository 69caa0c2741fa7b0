-- When a node stopped being Ready (its Ready condition's last transition), as the last sync saw it.
ALTER TABLE inventory_nodes ADD COLUMN not_ready_since TIMESTAMPTZ;
