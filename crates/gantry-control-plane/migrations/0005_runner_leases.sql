-- Which control-plane replica holds each runner's channel, until when
-- (`expires_at`, ms since the epoch on SQLite's clock; PostgreSQL keeps a
-- timestamptz on its own). The holder renews it while alive, so a dead
-- replica's runners are known to be gone once it expires. No foreign key:
-- a lease is coordination between replicas, taken before anything else is
-- written for the runner.
CREATE TABLE runner_leases (
    runner_id  TEXT PRIMARY KEY,
    replica_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
