-- Bearer tokens of the HTTP API's users (`gantry control-plane
-- create-token`). As with runners, only the SHA-256 of a token is kept.
CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
