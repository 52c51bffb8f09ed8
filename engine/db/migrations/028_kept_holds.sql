-- A hold whose charges its process kept on disk (their answers went out before the database took them) is marked,
-- and its life lengthened to the charge writer's, when they are kept (engine/money/charge-writer.ts): the sweeper
-- must not give back money those answers owe before the spool is written again. A replay of a dead process's
-- spool does not wait for such a hold to lapse, and gives it back once the charges are written
-- (engine/money/spool-replay.ts).
ALTER TABLE reservations ADD COLUMN IF NOT EXISTS kept_at timestamptz;
