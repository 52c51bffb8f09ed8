-- Models per key: the model ids or `prefix*` patterns a key may call. NULL: every model the wallet's credits
-- allow (as before this column existed).
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS models text[];

-- The audit trail of a wallet (engine/audit): every change, who made it, from where, and the values before
-- and after. Never a secret: key material is not written here, only ids and shown prefixes. Written in the
-- transaction of the change it records; pruned with the usage records (engine/usage/retention.ts).
CREATE TABLE IF NOT EXISTS wallet_audit (
  id          text PRIMARY KEY,                     -- aud_<uuid>
  seq         bigint GENERATED ALWAYS AS IDENTITY,  -- order within one instant
  wallet_id   text NOT NULL,
  at          timestamptz NOT NULL,
  actor_kind  text NOT NULL CHECK (actor_kind IN ('owner', 'management_key', 'operator')),
  actor_id    text,                                 -- owner id, management key id; null for the operator
  action      text NOT NULL,                        -- key.created, key.changed, key.closed, …
  target_id   text,                                 -- the key or lot the change is about
  ip          text,
  user_agent  text,
  before      jsonb,
  after       jsonb
);
CREATE INDEX IF NOT EXISTS wallet_audit_wallet_at ON wallet_audit (wallet_id, at DESC, seq DESC);
CREATE INDEX IF NOT EXISTS wallet_audit_age ON wallet_audit (at);
