-- The agent's memory. The tables are portable DDL; only the full-text
-- index is SQLite's own (FTS5). A PostgreSQL store would replace
-- `memories_fts` with a generated column and a GIN index:
--
--   ALTER TABLE memories ADD COLUMN search tsvector GENERATED ALWAYS AS
--       (to_tsvector('simple', content || ' ' || tags)) STORED;
--   CREATE INDEX memories_search ON memories USING GIN (search);
--
-- and rank with ts_rank_cd(search, query) instead of bm25(); `pk` would be
-- `BIGINT GENERATED ALWAYS AS IDENTITY`.

-- One row per memory. `scope` is `thread:<id>` or `agent:<id>`; `tags` and
-- `metadata` are the JSON of the item's tags (in order) and metadata.
CREATE TABLE memories (
    pk            INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    scope         TEXT NOT NULL,
    memory_type   TEXT NOT NULL,
    importance    DOUBLE PRECISION NOT NULL,
    created_at    BIGINT NOT NULL,
    access_count  BIGINT NOT NULL DEFAULT 0,
    last_accessed BIGINT,
    content       TEXT NOT NULL,
    tags          TEXT NOT NULL,
    metadata      TEXT NOT NULL
);

-- Statistics and clearing go by scope and type; listings without a query
-- by scope, importance and time.
CREATE INDEX memories_scope_type ON memories (scope, memory_type);

-- Tags, one row each, for the "carries every one of these tags" filter.
CREATE TABLE memory_tags (
    memory_pk INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    PRIMARY KEY (tag, memory_pk)
);

-- The full-text index: its rowid is `memories.pk`; `tags` holds the tags
-- joined by spaces. It keeps its own copy of the text (memories are small),
-- so a row is dropped by rowid alone. Every write to `memories` updates it
-- in the same transaction. `remove_diacritics 0` keeps the tokens exactly
-- the ones the in-memory store computes (letters and digits, lowercased).
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    tags,
    tokenize = 'unicode61 remove_diacritics 0'
);
