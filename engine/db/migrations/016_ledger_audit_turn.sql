-- Whose turn it is to audit the ledger, and what the last audit found. The audit reads the whole journal; with
-- every process auditing on its own timer, a service of many hosts read it once per process per interval. Now
-- the process whose timer fires first after `next_at` takes the turn (a conditional update: one wins), audits,
-- and writes its result here; the others show that result in their metrics. One row, made here.
CREATE TABLE ledger_audit_turn (
  id          int PRIMARY KEY CHECK (id = 1),
  next_at     timestamptz NOT NULL,
  taken_by    text,
  last_run    jsonb
);
INSERT INTO ledger_audit_turn (id, next_at) VALUES (1, 'epoch');
