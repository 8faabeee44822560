-- The PostgreSQL schema of the control plane's store: the same tables as
-- the SQLite migrations (migrations/, 0001 to 0005) in their current shape,
-- so store/sql.rs runs unchanged on both. What differs is said where it does.
--
-- Keys that listings order by are `COLLATE "C"`: byte order, as SQLite's
-- BINARY, whatever collation the database was created with, so lists come
-- out in the same order on both backends.

-- Runners allowed to connect. Only the SHA-256 of a token is kept; `sdks` is
-- the JSON of the runner's last RegisterRunner (what it offers); `protocol`
-- its pinned version (NULL: detected at each registration).
CREATE TABLE runners (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    token_hash    TEXT NOT NULL UNIQUE,
    sdks          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    registered_at BIGINT,
    protocol      TEXT
);

-- Bearer tokens of the HTTP API's users; only their SHA-256 is kept.
CREATE TABLE api_tokens (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- Agents, each living on one runner.
CREATE TABLE agents (
    id         TEXT COLLATE "C" PRIMARY KEY,
    runner_id  TEXT NOT NULL REFERENCES runners (id),
    sdk        TEXT NOT NULL,
    model      TEXT,
    status     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX agents_runner ON agents (runner_id);

-- Skill packages installed into an agent.
CREATE TABLE agent_skills (
    agent_id     TEXT NOT NULL REFERENCES agents (id),
    package_name TEXT COLLATE "C" NOT NULL,
    status       TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (agent_id, package_name)
);

-- Threads; the id is the one the runner chose. `name` and `token_usage`
-- are what 0.7.0 runners say of it; `mcp_servers` its MCP servers (JSON,
-- without secret values).
CREATE TABLE threads (
    id              TEXT COLLATE "C" PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents (id),
    runner_id       TEXT NOT NULL REFERENCES runners (id),
    model           TEXT NOT NULL,
    reasoning_level TEXT,
    status          TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    name            TEXT,
    token_usage     TEXT,
    mcp_servers     TEXT
);

CREATE INDEX threads_agent ON threads (agent_id);

-- Every request sent to a runner (see the SQLite migration 0001).
CREATE TABLE requests (
    id         TEXT PRIMARY KEY,
    runner_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    agent_id   TEXT,
    thread_id  TEXT,
    turn_id    TEXT,
    params     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Turns, latest state; `first_seq` orders turns in their thread.
CREATE TABLE turns (
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    id         TEXT NOT NULL,
    request_id TEXT NOT NULL,
    status     TEXT NOT NULL,
    first_seq  BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (thread_id, id)
);

CREATE INDEX turns_status ON turns (status);

-- Items, latest state; `command` is the JSON of a command execution.
CREATE TABLE items (
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    id         TEXT NOT NULL,
    turn_id    TEXT,
    item_type  TEXT NOT NULL,
    status     TEXT NOT NULL,
    text       TEXT,
    command    TEXT,
    first_seq  BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (thread_id, id)
);

-- Each applied update of a thread, in order; `seq` is dense per thread,
-- from 1: the primary key refuses a seq written twice, by any replica.
CREATE TABLE thread_updates (
    thread_id TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    ts        BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    data      TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
