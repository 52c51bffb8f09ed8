-- What the calls admitted on a budget lease hold, as its process last said (engine/money/in-flight.ts). A lease is
-- one reservation for many calls admitted in memory; without this column another process could not tell the
-- lease's money a call holds from the money it holds for no call, and every view showed one or the other wrong.
-- Meaningful only on held lease reservations; a call's own reservation holds its whole amount.
ALTER TABLE reservations ADD COLUMN IF NOT EXISTS in_flight_nano bigint NOT NULL DEFAULT 0 CHECK (in_flight_nano >= 0);
