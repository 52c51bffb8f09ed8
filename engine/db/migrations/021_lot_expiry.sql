-- Lots that expire (issue 42): a lot's remainder leaves the balance at `expires_at` as an `expire` move of the
-- journal (engine/money/lot-expiry.ts), the wallet's audit trail names it with the gateway itself as actor, and
-- the owner sets how many days before an expiry `credits.expiring` is sent.
ALTER TABLE credit_lots ADD COLUMN IF NOT EXISTS expires_at timestamptz;
-- What has left the lot as expiries, so views and the CLI can say so without summing the journal.
ALTER TABLE credit_lots ADD COLUMN IF NOT EXISTS expired_nano bigint NOT NULL DEFAULT 0 CHECK (expired_nano >= 0);
-- The expiry pass looks for lots past their expiry with money left: few, whatever the number of old lots.
CREATE INDEX IF NOT EXISTS credit_lots_expiry ON credit_lots (expires_at) WHERE expires_at IS NOT NULL AND available_nano > 0;

-- expire: money that left a lot at its expiry (available goes down; nothing is reserved or charged).
ALTER TABLE ledger_journal DROP CONSTRAINT IF EXISTS ledger_journal_kind_check;
ALTER TABLE ledger_journal ADD CONSTRAINT ledger_journal_kind_check
  CHECK (kind IN ('top_up', 'reserve', 'settle', 'release', 'expire'));

-- The gateway itself is an actor of the trail: an expiry is no one's request.
ALTER TABLE wallet_audit DROP CONSTRAINT IF EXISTS wallet_audit_actor_kind_check;
ALTER TABLE wallet_audit ADD CONSTRAINT wallet_audit_actor_kind_check
  CHECK (actor_kind IN ('owner', 'management_key', 'operator', 'manager', 'system'));

-- Days before a lot's expiry that credits.expiring is sent; NULL: the default of engine/alerts/policy.ts.
ALTER TABLE alert_settings ADD COLUMN IF NOT EXISTS credits_expiring_days integer CHECK (credits_expiring_days BETWEEN 1 AND 365);
