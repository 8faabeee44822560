-- A read-only API token (`create-token --read-only`) may only GET or HEAD.
ALTER TABLE api_tokens ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT FALSE;
