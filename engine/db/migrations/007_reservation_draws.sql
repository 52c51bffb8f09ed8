-- A process's budget lease is a reservation that many calls are charged out of ("draws"), each once: a
-- draw's id (the paying call's) is written with the money it moved, so a batch retried after an unclear
-- commit recognises the draws it already made and charges nothing twice.
CREATE TABLE reservation_draws (
  draw_id         text PRIMARY KEY,
  reservation_id  text NOT NULL REFERENCES reservations(id),
  amount_nano     bigint NOT NULL CHECK (amount_nano >= 0),
  at              timestamptz NOT NULL
);
CREATE INDEX reservation_draws_reservation ON reservation_draws (reservation_id);
