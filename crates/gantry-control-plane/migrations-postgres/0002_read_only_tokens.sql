-- A read-only API token (`create-token --read-only`) may only GET or HEAD
-- (the SQLite migration 0005).
ALTER TABLE api_tokens ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT FALSE;
