-- A key's use is no longer counted on rows of its own: its day figure is the sum of its `usage_daily` rows on the
-- Korean day, its month figure the sum over the Korean month's days (engine/keys/quota.ts). `api_key_usage` was a
-- second copy of those sums, written by every charge batch beside the rollup; it goes.
--
-- The key's figures over a month are read by key: an index by key and day (the primary key leads with the wallet).
-- Neither column changes when a charge adds to its row, so those updates stay HOT (charged_nano is left out on purpose).
CREATE INDEX usage_daily_key_day ON usage_daily (key_id, day);

-- Nothing counted is lost: where a key's counters hold more than its rollup rows sum to (a charge whose usage record
-- the database refused kept only its quota count; a charge that finished a moment after its record's instant, across
-- Korean midnight), the difference is added to the rollup as a row of model '' and no calls, on the counted day.
-- Days first, then each month's remainder (a month row with no day row beside it) on the month's first day.
INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
SELECT u.period::date, k.wallet_id, u.key_id, '', 0, u.used_nano - coalesce(r.sum, 0), 0, 0, 0, 0
  FROM api_key_usage u
  JOIN api_keys k ON k.id = u.key_id
  LEFT JOIN LATERAL (SELECT sum(x.charged_nano) AS sum FROM usage_daily x WHERE x.key_id = u.key_id AND x.day = u.period::date) r ON true
 WHERE u.scope = 'day' AND u.used_nano > coalesce(r.sum, 0)
ON CONFLICT (wallet_id, day, key_id, model) DO UPDATE SET charged_nano = d.charged_nano + EXCLUDED.charged_nano;

INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
SELECT (u.period || '-01')::date, k.wallet_id, u.key_id, '', 0, u.used_nano - coalesce(r.sum, 0), 0, 0, 0, 0
  FROM api_key_usage u
  JOIN api_keys k ON k.id = u.key_id
  LEFT JOIN LATERAL (SELECT sum(x.charged_nano) AS sum FROM usage_daily x
                      WHERE x.key_id = u.key_id AND x.day >= (u.period || '-01')::date
                        AND x.day < ((u.period || '-01')::date + interval '1 month')::date) r ON true
 WHERE u.scope = 'month' AND u.used_nano > coalesce(r.sum, 0)
ON CONFLICT (wallet_id, day, key_id, model) DO UPDATE SET charged_nano = d.charged_nano + EXCLUDED.charged_nano;

DROP TABLE api_key_usage;
