-- Key groups (a school's classes): a monthly and a daily limit on the sum of the group's keys' use, beside
-- each key's own limits (engine/keys/groups.ts, engine/keys/group-quota.ts). A group's use is not counted on
-- rows of its own: it is the sum of its keys' api_key_usage rows, so the one statement that counts a key's
-- use counts the group's, and a key that changes group takes its month's use along.
CREATE TABLE key_groups (
  id                    text PRIMARY KEY,                       -- grp_<24 base62>
  seq                   bigint GENERATED ALWAYS AS IDENTITY,    -- creation order
  wallet_id             text NOT NULL REFERENCES wallets(id),
  name                  text NOT NULL,
  monthly_limit_credits bigint CHECK (monthly_limit_credits >= 0),
  daily_limit_credits   bigint CHECK (daily_limit_credits >= 0),
  created_at            timestamptz NOT NULL,
  deleted_at            timestamptz                             -- set once; a deleted group is gone from every door
);
CREATE INDEX key_groups_wallet ON key_groups (wallet_id, created_at) WHERE deleted_at IS NULL;

ALTER TABLE api_keys ADD COLUMN group_id text REFERENCES key_groups(id);
-- A group's keys, for its use (sum of their counters) and its holds (their reservations in flight).
CREATE INDEX api_keys_group ON api_keys (group_id) WHERE group_id IS NOT NULL;

-- A manager an owner limits to some groups (a teacher and their classes): with rows here, the manager sees and
-- manages only those groups' keys and usage. No row: the manager's role applies to the whole wallet as before.
CREATE TABLE wallet_manager_groups (
  wallet_id text NOT NULL,
  identity  text NOT NULL,
  group_id  text NOT NULL REFERENCES key_groups(id),
  PRIMARY KEY (wallet_id, identity, group_id),
  FOREIGN KEY (wallet_id, identity) REFERENCES wallet_managers(wallet_id, identity) ON DELETE CASCADE
);
