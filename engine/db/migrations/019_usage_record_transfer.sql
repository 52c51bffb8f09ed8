-- A charge is one row: a call charged on a budget lease is recognised by its usage record, which now carries the
-- charge's id (a draw's id is its call's), so a batch retried after an unclear commit finds it there and charges
-- nothing twice. A draw row (reservation_draws) is written only for a charge whose usage record was refused.
-- The index is partial: records written before this have no id. On PostgreSQL it is made on every day's partition.
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS transfer_id text;
CREATE INDEX IF NOT EXISTS usage_records_transfer ON usage_records (transfer_id, at) WHERE transfer_id IS NOT NULL;
