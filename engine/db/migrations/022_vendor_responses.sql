-- Answers the vendor stored (issue 39): every wallet calls through one vendor account, so an id the vendor
-- made for one wallet's answer (a response, or one of its output items) would replay that wallet's
-- conversation to any caller naming it. The gateway writes one row per such answer with its charge
-- (engine/usage/vendor-responses.ts) and serves a later call naming an id only to the wallet of its row.
CREATE TABLE IF NOT EXISTS vendor_responses (
  id text PRIMARY KEY,
  wallet_id text NOT NULL,
  item_ids text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
-- An `item_reference` names an output item: found by the GIN index on the answer's items.
CREATE INDEX IF NOT EXISTS vendor_responses_items ON vendor_responses USING gin (item_ids);
-- Pruned with the usage records (engine/usage/retention.ts).
CREATE INDEX IF NOT EXISTS vendor_responses_created ON vendor_responses (created_at);
