//! Holds only the workspace's architecture tests (`tests/it/`); there is no library code.
