-- The owner's dashboard (engine/dashboard): one-time sign-in links and the sessions they open. Only sha256
-- hashes of the secrets are stored, so a copy of the database opens nothing. Both remember the owner the
-- wallet had when the link was issued: once the wallet changes owner they stop working (as management keys
-- do). Rows live in the database, so a link issued through one process signs in on any other.
CREATE TABLE dashboard_sign_in_tokens (
  token_hash  text PRIMARY KEY,
  wallet_id   text NOT NULL REFERENCES wallets(id),
  owner_id    text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX dashboard_sign_in_tokens_age ON dashboard_sign_in_tokens (expires_at);

CREATE TABLE dashboard_sessions (
  session_hash  text PRIMARY KEY,
  wallet_id     text NOT NULL REFERENCES wallets(id),
  owner_id      text NOT NULL,
  -- The per-session CSRF token put in every form; not a credential on its own (useless without the cookie).
  csrf_token    text NOT NULL,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_age ON dashboard_sessions (expires_at);
