-- The admin listing pages through wallets in creation order, (created_at, id), from a cursor: the index
-- lets each page start where the last one ended without reading the wallets before it.
CREATE INDEX IF NOT EXISTS wallets_created ON wallets (created_at, id);
