-- Portable DDL: the same statements run on SQLite and PostgreSQL.

-- Latest metadata of each thread; `data` is the JSON of gantry_types::Thread,
-- the other columns are copies of its fields for filtering and ordering.
CREATE TABLE threads (
    id         TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    archived   BOOLEAN NOT NULL,
    status     TEXT NOT NULL,
    data       TEXT NOT NULL
);

-- Listing pages: newest first (ids are UUIDv7), optionally filtered on archived.
CREATE INDEX threads_archived_id ON threads (archived, id);

-- Crash recovery looks up running threads.
CREATE INDEX threads_status ON threads (status);

-- The append-only log; `payload` is the JSON of gantry_types::EventPayload,
-- `kind` its name, so the log can be inspected without decoding JSON.
CREATE TABLE events (
    thread_id TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    ts        BIGINT NOT NULL,
    turn_id   TEXT,
    item_id   TEXT,
    kind      TEXT NOT NULL,
    payload   TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
