-- Statements of the medallion operators. Fields in braces are identifiers composed with the
-- driver's sql.Identifier (so no braces in the comments of a statement); values are parameters.

-- name: delete_interval
-- Bronze load, step 1 (same transaction as step 2): forget whatever an earlier try loaded.
DELETE FROM {table} WHERE {column} >= %(start)s AND {column} < %(end)s;

-- name: insert_row
-- Bronze load, step 2: one row of the interval (the column and value lists are composed).
INSERT INTO {table} ({columns}) VALUES ({values});
