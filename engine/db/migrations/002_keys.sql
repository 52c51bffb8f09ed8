-- API keys and per-key quota usage.
-- A key's secret is never stored: only its sha256 (hex). Quotas belong to the key's id, not its secret.
-- Times are timestamptz; Korean day and month boundaries are computed by the engine (engine/clock.ts),
-- never by the database time zone. Amounts are integer nano-USD (1 credit = 1,000 nano-USD).

CREATE TABLE IF NOT EXISTS api_keys (
  id                    text PRIMARY KEY,                       -- key_<24 base62>
  seq                   bigint GENERATED ALWAYS AS IDENTITY,    -- creation order (tie-break inside one batch)
  wallet_id             text NOT NULL REFERENCES wallets(id),
  kind                  text NOT NULL CHECK (kind IN ('api', 'management')),
  secret_hash           text NOT NULL UNIQUE,                   -- sha256 hex of the full key
  key_prefix            text NOT NULL,                          -- first 12 characters + '…'
  name                  text,
  audience              text CHECK (audience IN ('student', 'teacher')),
  monthly_limit_credits bigint CHECK (monthly_limit_credits >= 0),
  daily_limit_credits   bigint CHECK (daily_limit_credits >= 0),
  expires_on            date,                                   -- last Korean day of use
  created_by            text,                                   -- wallet owner id that made a management key
  is_chat_key           boolean NOT NULL DEFAULT false,         -- a person's chat-product key: hidden from key doors
  created_at            timestamptz NOT NULL DEFAULT now(),
  last_used_at          timestamptz,
  closed_at             timestamptz,                            -- set once; a closed key never reopens
  closed_reason         text,                                   -- deleted | slot_race | owner_changed
  create_request_id     text                                    -- groups the keys one POST /v1/keys made
);

-- Active keys of a wallet, newest first (the list door and the slot count).
CREATE INDEX IF NOT EXISTS api_keys_wallet_open
  ON api_keys (wallet_id, created_at DESC, seq DESC)
  WHERE closed_at IS NULL;

CREATE INDEX IF NOT EXISTS api_keys_create_request
  ON api_keys (create_request_id)
  WHERE create_request_id IS NOT NULL;

-- Used amount per key and Korean period: scope 'day' with period 'YYYY-MM-DD', scope 'month' with 'YYYY-MM'.
-- Only finished calls are counted, on the Korean day and month the call finished.
CREATE TABLE IF NOT EXISTS api_key_usage (
  key_id    text NOT NULL REFERENCES api_keys(id),
  scope     text NOT NULL CHECK (scope IN ('day', 'month')),
  period    text NOT NULL,
  used_nano bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, scope, period)
);
