-- Ledger: wallets, credit lots, reservations and the append-only journal.
-- Money is integer nano-USD (bigint). One credit = 1,000 nano-USD.
--
-- Balances live in columns moved by atomic statements under row locks; the journal records every move:
--   per lot:    available = Σ top_up − Σ reserve + Σ release
--               reserved  = Σ reserve − Σ settle − Σ release
--   per wallet: the same sums over the wallet's rows (wallet columns = Σ of its lots' columns).
-- Every journal amount is positive; the kind gives the direction.

CREATE TABLE wallets (
  id              text PRIMARY KEY,
  owner_id        text NOT NULL,
  splits_usage    boolean NOT NULL DEFAULT false,
  key_slots       integer NOT NULL DEFAULT 100 CHECK (key_slots >= 0),
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- Σ credit_lots.available_nano / reserved_nano of this wallet.
  available_nano  bigint NOT NULL DEFAULT 0 CHECK (available_nano >= 0),
  reserved_nano   bigint NOT NULL DEFAULT 0 CHECK (reserved_nano >= 0)
);

CREATE TABLE credit_lots (
  id              text PRIMARY KEY,
  wallet_id       text NOT NULL REFERENCES wallets(id),
  -- Order of purchase: lots are drawn oldest first (restricted lots before unrestricted ones).
  seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  -- NULL: serves every vendor. Otherwise the vendor letters it serves (a vendor C pack is {c}).
  vendors         text[],
  granted_nano    bigint NOT NULL CHECK (granted_nano > 0),
  available_nano  bigint NOT NULL CHECK (available_nano >= 0),
  reserved_nano   bigint NOT NULL DEFAULT 0 CHECK (reserved_nano >= 0),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credit_lots_wallet ON credit_lots (wallet_id, seq);

CREATE TABLE reservations (
  id              text PRIMARY KEY,
  wallet_id       text NOT NULL REFERENCES wallets(id),
  -- The process that holds it (host:pid:random); for the operator's eyes and for sweeping.
  owner           text NOT NULL,
  call_id         text NOT NULL,
  key_id          text,
  vendor          text NOT NULL,
  amount_nano     bigint NOT NULL CHECK (amount_nano >= 0),
  -- held → settled | released (by the caller) | expired (released by the sweeper; a late settle may
  -- still charge what the lots can cover and move it to settled).
  state           text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'settled', 'released', 'expired')),
  charged_nano    bigint,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  finished_at     timestamptz
);
CREATE INDEX reservations_held_expiry ON reservations (expires_at) WHERE state = 'held';
CREATE INDEX reservations_wallet ON reservations (wallet_id, created_at);
CREATE INDEX reservations_key ON reservations (key_id, created_at) WHERE key_id IS NOT NULL;

-- How much of a reservation each lot holds (what settle and release give back).
CREATE TABLE reservation_lots (
  reservation_id  text NOT NULL REFERENCES reservations(id),
  lot_id          text NOT NULL REFERENCES credit_lots(id),
  amount_nano     bigint NOT NULL CHECK (amount_nano >= 0),
  PRIMARY KEY (reservation_id, lot_id)
);

CREATE TABLE ledger_journal (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  wallet_id       text NOT NULL REFERENCES wallets(id),
  lot_id          text NOT NULL REFERENCES credit_lots(id),
  reservation_id  text REFERENCES reservations(id),
  kind            text NOT NULL CHECK (kind IN ('top_up', 'reserve', 'settle', 'release')),
  amount_nano     bigint NOT NULL CHECK (amount_nano >= 0),
  at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_journal_wallet ON ledger_journal (wallet_id, id);
CREATE INDEX ledger_journal_reservation ON ledger_journal (reservation_id) WHERE reservation_id IS NOT NULL;
