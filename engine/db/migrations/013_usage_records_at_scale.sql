-- Usage records at scale, and the prices that charged them.
--
-- Every record now keeps the prices it was charged at (`prices`, the compact JSON of engine/catalog/usage-cost.ts)
-- and the call's trace id. A daily rollup per Korean day, wallet, key and model is written beside each record by
-- the same statement; the dashboard's chart, totals and summary CSV read it. It is backfilled here from the
-- records there are.
--
-- On a PostgreSQL server (the migration runner says which database it runs on in `gateway.database_kind`), the
-- records move into a table partitioned by Korean day, so retention drops whole days (engine/usage/record-storage.ts
-- makes the coming days' partitions at start and hourly). The partitioned table has no primary key (one would
-- have to carry `at`) and no foreign key to wallets: attaching or detaching a partition with one would lock the
-- wallets table, which every settle writes. The embedded database keeps its plain table.
CREATE TABLE usage_daily (
  day                 date NOT NULL,
  wallet_id           text NOT NULL,
  key_id              text NOT NULL,      -- '' for calls without a key
  model               text NOT NULL,
  calls               bigint NOT NULL,
  charged_nano        bigint NOT NULL,
  input_tokens        numeric NOT NULL,
  cache_read_tokens   numeric NOT NULL,
  cache_write_tokens  numeric NOT NULL,
  output_tokens       numeric NOT NULL,
  PRIMARY KEY (wallet_id, day, key_id, model)
);

INSERT INTO usage_daily
SELECT (at AT TIME ZONE 'Asia/Seoul')::date, wallet_id, coalesce(key_id, ''), model, count(*), sum(charged_nano)::bigint,
       sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens)
  FROM usage_records GROUP BY 1, 2, 3, 4;

DO $migration$
DECLARE
  d date;
  next_seq bigint;
BEGIN
  IF current_setting('gateway.database_kind', true) IS DISTINCT FROM 'postgres' THEN
    ALTER TABLE usage_records ADD COLUMN trace_id text, ADD COLUMN prices jsonb;
    RETURN;
  END IF;

  ALTER TABLE usage_records RENAME TO usage_records_unpartitioned;
  DROP INDEX usage_records_lookup;
  DROP INDEX usage_records_recent;
  DROP INDEX usage_records_age;
  SELECT coalesce(max(seq), 0) + 1 INTO next_seq FROM usage_records_unpartitioned;
  CREATE SEQUENCE usage_records_seq;
  PERFORM setval('usage_records_seq', next_seq, false);

  CREATE TABLE usage_records (
    seq                 bigint NOT NULL DEFAULT nextval('usage_records_seq'),
    request_id          text NOT NULL,
    wallet_id           text NOT NULL,
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
    duration_ms         integer NOT NULL,
    trace_id            text,
    prices              jsonb
  ) PARTITION BY RANGE (at);
  ALTER SEQUENCE usage_records_seq OWNED BY usage_records.seq;
  CREATE INDEX usage_records_lookup ON usage_records (wallet_id, request_id, seq DESC);
  -- The lists (the dashboard's newest calls, a month's CSV) read a wallet's records in time order from this
  -- index alone: it carries every column they show (all but `prices`, which only the one-call reads need), so
  -- a month of one wallet is a run of index pages rather than one heap page per record (a wallet's records are
  -- spread over a day's table among every other wallet's). Closed days are vacuumed by the upkeep, so the
  -- visibility map lets the scan skip the heap.
  CREATE INDEX usage_records_recent ON usage_records (wallet_id, at DESC, seq DESC)
    INCLUDE (request_id, key_id, door, model, vendor, route, fallback_depth, input_tokens, cache_read_tokens, cache_write_tokens,
             output_tokens, reasoning_tokens, server_tool_calls, characters, images, video_seconds, charged_nano, duration_ms, trace_id);

  -- A partition for every Korean day that has records, and for the days around now (a process may write
  -- before its first upkeep run; the upkeep makes the rest).
  FOR d IN
    SELECT DISTINCT (at AT TIME ZONE 'Asia/Seoul')::date FROM usage_records_unpartitioned
    UNION
    SELECT generate_series((now() AT TIME ZONE 'Asia/Seoul')::date - 1, (now() AT TIME ZONE 'Asia/Seoul')::date + 14, interval '1 day')::date
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF usage_records FOR VALUES FROM (%L) TO (%L)',
                   'usage_records_' || to_char(d, 'YYYYMMDD'),
                   d::timestamp AT TIME ZONE 'Asia/Seoul', (d + 1)::timestamp AT TIME ZONE 'Asia/Seoul');
  END LOOP;

  INSERT INTO usage_records (seq, request_id, wallet_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens,
                             cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, server_tool_calls,
                             characters, images, video_seconds, charged_nano, duration_ms)
  SELECT seq, request_id, wallet_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens,
         cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, server_tool_calls,
         characters, images, video_seconds, charged_nano, duration_ms
    FROM usage_records_unpartitioned;
  DROP TABLE usage_records_unpartitioned;
END
$migration$;
