-- The replicas' shared secret: every message one replica sends another over
-- NATS carries an HMAC made with it, so a NATS client that cannot read this
-- store cannot pass for a replica. One row, written by the first replica.
CREATE TABLE cluster_secret (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    secret TEXT NOT NULL
);
