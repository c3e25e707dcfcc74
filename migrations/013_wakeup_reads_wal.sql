-- A relay that reads the write-ahead log for commits (LIVERELAY_WAKEUP=auto) says so in its gate row: writers never
-- need to notify it, except those that commit asynchronously (synchronous_commit = off), whose commits the log shows
-- only when the WAL writer flushes them, up to wal_writer_delay later (sql/020_triggers.sql, liverelay_wake).
ALTER TABLE relay_wakeup ADD COLUMN IF NOT EXISTS reads_wal boolean NOT NULL DEFAULT false;
