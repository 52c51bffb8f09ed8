-- A call charged on a lease is its usage record alone, carrying the lease's id: the lease's lots, hold and journal
-- move once, when the lease ends, by the sum of its records (engine/money/lease-records.ts, docs/money.md). The
-- index finds a lease's records for that sum and for the views, which count them as spent meanwhile.
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS lease_id text;
CREATE INDEX IF NOT EXISTS usage_records_lease ON usage_records (lease_id) WHERE lease_id IS NOT NULL;

-- Raised by a statement of such records whose lease ended meanwhile, or one of whose charges was written before: it
-- writes nothing, and its charges are written one by one the way that finds out which (engine/money/batcher.ts).
CREATE OR REPLACE FUNCTION lease_records_fit(ok boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION 'a lease these charges are owed on is no longer held, or one of them was written before' USING ERRCODE = 'GWLSE';
  END IF;
END
$$;

-- Nothing decides on remembered rows any more: the check they were sent with is gone.
DROP FUNCTION IF EXISTS ledger_expect(boolean);
