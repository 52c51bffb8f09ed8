-- Alerts before money runs out, delivered to the owner's signed webhooks (engine/alerts).
--
-- alert_settings: a wallet's thresholds. No row: the defaults of engine/alerts/policy.ts apply.
CREATE TABLE IF NOT EXISTS alert_settings (
  wallet_id             text PRIMARY KEY,
  balance_percents      integer[] NOT NULL,   -- percent of the last top-up, e.g. {20,5}
  balance_credits       bigint[] NOT NULL,    -- absolute balances in credits
  key_monthly_percents  integer[] NOT NULL,   -- percent of each key's monthly limit, e.g. {80,100}
  key_daily_percents    integer[] NOT NULL,   -- percent of each key's daily limit
  updated_at            timestamptz NOT NULL
);

-- One row per (subject, threshold): whether the threshold may fire. A crossing fires by a conditional write
-- (armed → not armed, RETURNING), so exactly one process of many fires it; seeing the figure back on the safe
-- side re-arms it. `period` is the Korean day or month a key threshold fired in (a new period re-arms it without
-- anyone having to notice the reset), the expiry date for key.expiring, '' for wallet thresholds.
CREATE TABLE IF NOT EXISTS alert_state (
  subject    text NOT NULL,                 -- wallet:<id> or key:<id>
  threshold  text NOT NULL,                 -- balance_pct:20, balance_credits:1000, month:80, day:100, expiring
  armed      boolean NOT NULL DEFAULT true,
  period     text NOT NULL DEFAULT '',
  fired_at   timestamptz,
  PRIMARY KEY (subject, threshold)
);
CREATE INDEX IF NOT EXISTS alert_state_disarmed ON alert_state (subject) WHERE NOT armed;

-- The owner's webhook endpoints. The secret signs deliveries, so it is kept as given (a hash could not sign);
-- it is shown once at creation and never answered again. Deleted endpoints are kept (deliveries point at them).
CREATE TABLE IF NOT EXISTS webhooks (
  id          text PRIMARY KEY,             -- wh_<hex>
  wallet_id   text NOT NULL,
  url         text NOT NULL,
  events      text[] NOT NULL,
  secret      text NOT NULL,
  created_at  timestamptz NOT NULL,
  deleted_at  timestamptz
);
CREATE INDEX IF NOT EXISTS webhooks_wallet ON webhooks (wallet_id) WHERE deleted_at IS NULL;

-- Each event once, with the exact body every delivery of it (retries, replays) sends.
CREATE TABLE IF NOT EXISTS webhook_events (
  id          text PRIMARY KEY,             -- evt_<hex>
  wallet_id   text NOT NULL,
  type        text NOT NULL,
  created_at  timestamptz NOT NULL,
  body        text NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_events_wallet ON webhook_events (wallet_id, created_at DESC);

-- The durable delivery queue: one row per (event, endpoint) send, and one more per replay. Claimed by a lease
-- (locked_until) so one process sends it at a time; times are the database's own now(), shared by every process.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id               text PRIMARY KEY,        -- dlv_<hex>
  event_id         text NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
  webhook_id       text NOT NULL REFERENCES webhooks(id),
  state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  locked_until     timestamptz,
  replay_of        text,                    -- the delivery a replay repeats
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at DESC);

-- Every attempt: the answer's status (null when none came) and a bounded excerpt of its body, or the error.
CREATE TABLE IF NOT EXISTS webhook_attempts (
  delivery_id  text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  n            integer NOT NULL,
  at           timestamptz NOT NULL DEFAULT now(),
  status_code  integer,
  error        text,
  excerpt      text,
  duration_ms  integer NOT NULL,
  PRIMARY KEY (delivery_id, n)
);
