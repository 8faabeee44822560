-- A 0.7.0 thread's MCP servers (JSON): each server's name and how it is
-- reached, without the values of its environment, headers or token (those
-- go to the runner and are not kept).
ALTER TABLE threads ADD COLUMN mcp_servers TEXT;
