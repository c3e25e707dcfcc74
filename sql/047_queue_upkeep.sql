-- The queues' dead rows (README "Design": a queue's vacuum).
--
-- Every delivered row is deleted, so a drained backlog leaves its dead rows at the head of the queue's due index,
-- where every general claim starts: until a VACUUM removes them, each claim reads past them (after one UPDATE of
-- 100,000 activities: 386 index pages, ~0.5 ms a claim, for the minute or more autovacuum takes to come). The relay
-- vacuums a queue itself once it holds mostly dead rows (QueueVacuum).

-- The queues to vacuum now, by the statistics PostgreSQL keeps: at least `min_dead` dead rows and at most a tenth as
-- many live ones (a drained backlog, or a steady stream of deliveries: not a backlog still being worked through), no
-- vacuum in the last `quiet_seconds` (by any relay, or autovacuum: a vacuum that an old snapshot kept from removing
-- the rows is not repeated every few seconds), and owned by a role of ours (VACUUM skips other tables with a warning).
CREATE OR REPLACE FUNCTION liverelay_queues_to_vacuum(min_dead bigint, quiet_seconds double precision)
RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT s.relname::text FROM pg_stat_user_tables s
    JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND s.relname IN ('delivery_outbox', 'webhook_outbox')
      AND s.n_dead_tup >= min_dead AND s.n_live_tup * 10 <= s.n_dead_tup
      AND coalesce(greatest(s.last_vacuum, s.last_autovacuum), '-infinity')
          < now() - make_interval(secs => quiet_seconds)
      AND pg_has_role(c.relowner, 'MEMBER')
    ORDER BY s.relname
$$;
