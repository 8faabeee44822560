-- The PostgreSQL schema of the engine's store: the same tables as the
-- SQLite migrations (migrations/, 0001 to 0006) in their current shape, so
-- sql.rs runs unchanged on both. What differs is said where it does.
--
-- Keys that listings order by are `COLLATE "C"`: byte order, as SQLite's
-- BINARY, whatever collation the database was created with, so pages and
-- cursors come out the same on both backends.

-- Latest metadata of each thread; `data` is the JSON of gantry_types::Thread.
CREATE TABLE threads (
    id         TEXT COLLATE "C" PRIMARY KEY,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    archived   BOOLEAN NOT NULL,
    status     TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX threads_archived_id ON threads (archived, id);
CREATE INDEX threads_status ON threads (status);

-- The append-only log. `pos` is the commit cursor: dense from 1, in commit
-- order across all threads (see event_cursor).
CREATE TABLE events (
    thread_id TEXT COLLATE "C" NOT NULL,
    seq       BIGINT NOT NULL,
    ts        BIGINT NOT NULL,
    turn_id   TEXT,
    item_id   TEXT,
    kind      TEXT NOT NULL,
    payload   TEXT NOT NULL,
    pos       BIGINT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE UNIQUE INDEX events_pos ON events (pos);

-- The last commit cursor handed out, one row. A commit takes the next
-- cursors with `UPDATE ... RETURNING`, whose row lock it holds until it
-- commits: every writer (of any process) waits for the one before it, so
-- cursors are dense, and a commit with higher cursors only becomes visible
-- after the one with lower cursors did. A rolled-back commit gives its
-- cursors back. (A sequence would leave gaps, and could not order commits.)
CREATE TABLE event_cursor (
    id   SMALLINT PRIMARY KEY CHECK (id = 1),
    last BIGINT NOT NULL
);
INSERT INTO event_cursor (id, last) VALUES (1, 0);

-- Providers added through the engine API (JSON, keys sealed) and settings.
CREATE TABLE providers (
    name TEXT COLLATE "C" PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE settings (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);

-- Agents (JSON of gantry_types::Agent).
CREATE TABLE agents (
    id   TEXT COLLATE "C" PRIMARY KEY,
    data TEXT NOT NULL
);

-- The agent's memory. Where SQLite keeps an FTS5 table beside it, the row
-- holds its own `tsvector`, indexed with GIN. The store builds it from the
-- same tokens as the other backends (letters and digits, lowercased: see
-- memories/tokens.rs) rather than with to_tsvector(), whose parser reads
-- e-mail addresses, URLs and hyphenated words as words of their own, so a
-- query finds the same memories on every backend.
CREATE TABLE memories (
    pk            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            TEXT COLLATE "C" NOT NULL UNIQUE,
    scope         TEXT NOT NULL,
    memory_type   TEXT NOT NULL,
    importance    DOUBLE PRECISION NOT NULL,
    created_at    BIGINT NOT NULL,
    access_count  BIGINT NOT NULL DEFAULT 0,
    last_accessed BIGINT,
    content       TEXT NOT NULL,
    tags          TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    search        TSVECTOR NOT NULL
);
CREATE INDEX memories_scope_type ON memories (scope, memory_type);
CREATE INDEX memories_search ON memories USING GIN (search);

CREATE TABLE memory_tags (
    memory_pk BIGINT NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    PRIMARY KEY (tag, memory_pk)
);
CREATE INDEX memory_tags_memory ON memory_tags (memory_pk);

-- Scheduled jobs and their runs.
CREATE TABLE cron_jobs (
    id   TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    data TEXT NOT NULL
);
CREATE TABLE cron_executions (
    id         TEXT COLLATE "C" PRIMARY KEY,
    job_id     TEXT COLLATE "C" NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
    started_at BIGINT NOT NULL,
    status     TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX cron_executions_by_job ON cron_executions (job_id, started_at);
CREATE INDEX cron_executions_by_status ON cron_executions (status);

-- The version of the stored log's format (see the SQLite migration 0006).
INSERT INTO settings (key, value) VALUES ('log_format_version', '1');
