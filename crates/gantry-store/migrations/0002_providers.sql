-- Portable DDL: the same statements run on SQLite and PostgreSQL.

-- Providers added or changed through the engine API; `data` is the JSON of
-- gantry_types::ProviderConfig. A key read from the environment is never
-- here, only the variable's name.
CREATE TABLE providers (
    name TEXT PRIMARY KEY,
    data TEXT NOT NULL
);

-- Small key/value settings (the default model, ...).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
