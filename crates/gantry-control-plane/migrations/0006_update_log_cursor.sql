-- Every thread's log in commit order (GET /v1/events): `log_position`, the
-- row id, given in commit order since SQLite commits one writer at a time.
-- The table is rebuilt for it (a column cannot become the row id); the
-- rows keep their order, and (thread_id, seq) stays unique.
CREATE TABLE thread_updates_by_position (
    log_position INTEGER PRIMARY KEY,
    thread_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    ts           BIGINT NOT NULL,
    kind         TEXT NOT NULL,
    data         TEXT NOT NULL,
    UNIQUE (thread_id, seq)
);

INSERT INTO thread_updates_by_position (log_position, thread_id, seq, ts, kind, data)
    SELECT rowid, thread_id, seq, ts, kind, data FROM thread_updates ORDER BY rowid;

DROP TABLE thread_updates;

ALTER TABLE thread_updates_by_position RENAME TO thread_updates;
