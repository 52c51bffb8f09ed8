-- A hold whose charges its process kept on disk (their answers went out before the database took them) is marked
-- while they wait (engine/money/kept-holds.ts): the sweeper leaves it for a day past the mark rather than give back
-- money those answers owe before the spool is written again. A replay of a dead process's spool does not wait for
-- such a hold to lapse, and gives it back once the charges are written (engine/money/spool-replay.ts).
ALTER TABLE reservations ADD COLUMN IF NOT EXISTS kept_at timestamptz;
