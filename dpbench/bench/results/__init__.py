"""Results: the result schema, the SQLite store of result rows, the tidy frame and summaries."""
