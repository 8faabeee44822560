-- Portable DDL: the same statements run on SQLite and PostgreSQL.

-- Scheduled jobs; `data` is the JSON of gantry_types::cron::CronJob. The
-- name is a column of its own so that the database keeps it unique.
CREATE TABLE cron_jobs (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    data TEXT NOT NULL
);

-- Runs of a job; `data` is the JSON of gantry_types::cron::CronExecution.
-- `started_at` and `status` are columns for the history listing and for
-- finding runs a stopped process left unfinished.
CREATE TABLE cron_executions (
    id         TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
    started_at BIGINT NOT NULL,
    status     TEXT NOT NULL,
    data       TEXT NOT NULL
);

CREATE INDEX cron_executions_by_job ON cron_executions (job_id, started_at);
CREATE INDEX cron_executions_by_status ON cron_executions (status);
