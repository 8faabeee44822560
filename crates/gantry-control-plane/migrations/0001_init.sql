-- The control plane's own database (control-plane.db), apart from the
-- engine's. Portable DDL: the same statements run on SQLite and PostgreSQL.

-- Runners allowed to connect. Only the SHA-256 of a token is kept; `sdks` is
-- the JSON of the runner's last RegisterRunner (what it offers).
CREATE TABLE runners (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    token_hash    TEXT NOT NULL UNIQUE,
    sdks          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    registered_at BIGINT
);

-- Agents, each living on one runner.
CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
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
    package_name TEXT NOT NULL,
    status       TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (agent_id, package_name)
);

-- Threads; the id is the one the runner chose.
CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents (id),
    runner_id       TEXT NOT NULL REFERENCES runners (id),
    model           TEXT NOT NULL,
    reasoning_level TEXT,
    status          TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE INDEX threads_agent ON threads (agent_id);

-- Every request sent to a runner. Updates carry no thread id in 0.2.0, only
-- the request id they answer: this table attributes them. `thread_id` and
-- `turn_id` are filled in as the runner's answers name them; `params` is the
-- JSON of what the answer needs to be recorded (e.g. a new thread's model).
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

-- Turns, latest state, keyed by the runner's turn id. `request_id` is the
-- request that started the turn; `first_seq` orders turns in their thread.
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

-- Turns running on a runner are its load.
CREATE INDEX turns_status ON turns (status);

-- Items, latest state, keyed by the runner's item id. `command` is the JSON of
-- a command execution (command, cwd, process id, output).
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

-- Each applied update of a thread, in order: what a live follower replays.
-- `seq` is dense per thread, from 1; `data` is the update's JSON.
CREATE TABLE thread_updates (
    thread_id TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    ts        BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    data      TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
