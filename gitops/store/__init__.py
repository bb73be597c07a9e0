"""The store: what the database holds of each cluster, read before a poll and written after it.

- `read`: what the store holds of one cluster before a poll writes (one query per table);
  derive (gitops.derive, pure) compares a poll's rows with it;
- `write`: one cluster's poll in one transaction, only what changed;
- `bulk`: the fast bulk paths the write uses for many wide rows (COPY, UPDATE … FROM);
- `column_limits`: values cut to the columns that hold them, so one bad string never fails
  a cluster's write;
- `columns`: a field's value as a parameter and a column's value read back, for the statements
  every poll runs written as SQL text (its lock, outcome and previous poll's record).

Pages and the API read the models and their querysets (gitops.models), not this package.
"""
