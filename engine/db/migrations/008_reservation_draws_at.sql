-- Draws are pruned by age (engine/money/draw-retention.ts). They are written in time order, so a BRIN index
-- finds the old ones at almost no cost to the writes, which come one per leased call.
CREATE INDEX IF NOT EXISTS reservation_draws_at ON reservation_draws USING brin (at);
