-- companyhelm.runner.v1 0.7.0 beside 0.2.0: a runner's pinned protocol
-- version (NULL: detected at each registration, see ProtocolVersion::detect),
-- and what 0.7.0 runners say of a thread by its id: its name, and its token
-- usage (the JSON of the last ThreadTokenUsageUpdate).
ALTER TABLE runners ADD COLUMN protocol TEXT;
ALTER TABLE threads ADD COLUMN name TEXT;
ALTER TABLE threads ADD COLUMN token_usage TEXT;
