"""Results (layer 7): the SQLite store of result rows."""
