-- Portable DDL: the same statements run on SQLite and PostgreSQL.

-- Agents: named configurations threads run under; `data` is the JSON of
-- gantry_types::Agent.
CREATE TABLE agents (
    id   TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
