"""The dead-letter queue: letters in PostgreSQL, written by the failure callback and replayed by hand."""
