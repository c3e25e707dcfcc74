-- The last delivery of each activity, for the activities view, the dashboard and the MCP tools (one index probe per
-- activity instead of a scan of the log).
CREATE INDEX delivery_log_activity ON delivery_log (activity_id, id) WHERE activity_id IS NOT NULL;
