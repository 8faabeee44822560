-- The commit cursor: every event's position in the order events were
-- committed, across all threads, dense from 1. An all-threads feed resumes
-- from it. Events stored before it existed get their insertion order.
ALTER TABLE events ADD COLUMN pos BIGINT;
UPDATE events SET pos = rowid;
CREATE UNIQUE INDEX events_pos ON events (pos);

-- The version of the stored log's format (payload JSON and columns). A
-- store refuses a newer version than it knows; an incompatible change
-- comes with a migration that rewrites old rows and bumps this.
INSERT INTO settings (key, value) VALUES ('log_format_version', '1')
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
