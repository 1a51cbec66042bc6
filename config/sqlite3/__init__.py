"""SQLite with each process's connections kept open between requests (``base.DatabaseWrapper``)."""
