-- The ledger audit (engine/money/audit.ts) sums the whole journal per (wallet_id, lot_id). Without this the
-- planner multiplies the two columns' distinct counts, expects about as many groups as rows, and sorts the
-- journal on disk instead of hashing a few groups per lot in memory (2,000,000 rows: 200 MB of temporary
-- files and twice the time). A lot belongs to one wallet, which these statistics tell it.
CREATE STATISTICS IF NOT EXISTS ledger_journal_wallet_lot (ndistinct) ON wallet_id, lot_id FROM ledger_journal;
ANALYZE ledger_journal;
