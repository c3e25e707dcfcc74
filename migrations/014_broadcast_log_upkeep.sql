-- broadcast_log is only appended to, and the hub deletes what is older than its retention every 10 minutes
-- (sql/060_stream_retention.sql). Since PostgreSQL 13 autovacuum also vacuums a table for its inserts alone: after a
-- bulk write (one UPDATE of 100,000 activities appends as many events) that vacuum ran for a minute or more beside
-- the deliveries and the streams that followed (10,000 streams' p99 240-250 ms with it beside, 207-237 ms without,
-- in turn). The log needs it for nothing: nothing reads it index-only, and the pruning's deletions start vacuums of
-- their own, which also freeze what stays. What the insert vacuums did that is needed, summarizing the BRIN index's
-- new block ranges for the pruning's scan, the index now asks for itself as each range fills (autosummarize: a small
-- work item for autovacuum). delivery_log keeps its insert vacuums: nothing deletes from it, so they are what freezes
-- its rows a little at a time.
ALTER TABLE broadcast_log SET (autovacuum_vacuum_insert_threshold = -1);
ALTER INDEX broadcast_log_created SET (autosummarize = on);
