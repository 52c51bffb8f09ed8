-- A key's calls in flight: every reserve that carries the key's monthly cap sums what the key's held
-- reservations hold. Only held rows are indexed, so that read stays as small as the calls in flight,
-- however many calls the key made before.
CREATE INDEX IF NOT EXISTS reservations_key_held ON reservations (key_id) WHERE state = 'held' AND key_id IS NOT NULL;
