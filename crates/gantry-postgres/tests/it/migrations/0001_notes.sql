-- The one table of the tests' schema.
CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL);
