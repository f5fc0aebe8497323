"""The DAP test kit: a DAP client, the schema check, native test modules and their fixtures."""
