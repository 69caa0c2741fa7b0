-- A backup may ask the cluster for a VolumeSnapshot of every claim it records (where the
-- cluster serves the snapshot API); what came of it is in the backup's summary.
ALTER TABLE backups ADD COLUMN snapshot_volumes BOOLEAN NOT NULL DEFAULT FALSE;
