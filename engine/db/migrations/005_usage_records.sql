-- One row per settled model call, written in the settle's own transaction (never on a second path), so a
-- record exists exactly when the call was charged. Looked up by the request id returned to the client,
-- within the caller's wallet; a client may reuse its own x-request-id, so the key is a sequence and a
-- lookup answers the newest record with that id. Kept `limits.usage_record_days`, then pruned.
CREATE TABLE usage_records (
  seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id          text NOT NULL,
  wallet_id           text NOT NULL REFERENCES wallets(id),
  key_id              text,
  at                  timestamptz NOT NULL,
  door                text NOT NULL,
  model               text NOT NULL,
  vendor              text NOT NULL,
  route               text,
  fallback_depth      integer NOT NULL DEFAULT 0,
  input_tokens        bigint NOT NULL DEFAULT 0,
  cache_read_tokens   bigint NOT NULL DEFAULT 0,
  cache_write_tokens  bigint NOT NULL DEFAULT 0,
  output_tokens       bigint NOT NULL DEFAULT 0,
  reasoning_tokens    bigint,
  server_tool_calls   integer NOT NULL DEFAULT 0,
  characters          bigint,
  images              integer,
  video_seconds       numeric,
  charged_nano        bigint NOT NULL,
  duration_ms         integer NOT NULL
);
CREATE INDEX usage_records_lookup ON usage_records (wallet_id, request_id, seq DESC);
CREATE INDEX usage_records_recent ON usage_records (wallet_id, at DESC);
CREATE INDEX usage_records_age ON usage_records (at);
