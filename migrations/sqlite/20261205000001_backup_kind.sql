-- A backup copies a cluster's resources through its API server ('resources'), or a hosted
-- control plane's whole key space in the shared etcd at one revision ('key_space', sealed in
-- the vault).
ALTER TABLE backups ADD COLUMN kind TEXT NOT NULL DEFAULT 'resources';
-- A schedule takes backups of one kind, with volume snapshots when asked.
ALTER TABLE backup_schedules ADD COLUMN kind TEXT NOT NULL DEFAULT 'resources';
ALTER TABLE backup_schedules ADD COLUMN snapshot_volumes BOOLEAN NOT NULL DEFAULT FALSE;
