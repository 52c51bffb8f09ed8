-- What each key's calls on a lease hold ({"<key id>": "<nano>"}), told by the lease's process with in_flight_nano:
-- a key's and its class's limits count its calls on a lease, even those admitted before the key joined the class or
-- got a limit of its own (engine/keys/key-use.ts, engine/keys/group-quota.ts).
ALTER TABLE reservations ADD COLUMN IF NOT EXISTS in_flight_by_key jsonb;
-- The held leases with figures per key, by wallet: what a key's or a class's limit reads at each capped reserve.
CREATE INDEX IF NOT EXISTS reservations_lease_keys_held ON reservations (wallet_id) WHERE state = 'held' AND in_flight_by_key IS NOT NULL;
