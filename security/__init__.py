"""Who may get in and what never leaks: log-in lock-out, API tokens and throttles, private files."""
