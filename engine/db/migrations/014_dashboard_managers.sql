-- Sign-in with the school's identity provider (engine/identity): the people a wallet's owner lets into its
-- dashboard, each with a role, and what a dashboard session now remembers about who opened it.
--
-- `identity` is what GATEWAY_OIDC_MATCH compares: the provider's subject, or the verified e-mail address in
-- lower case. A manager row is read again on every request of a manager's session, so removing a manager or
-- changing the role takes effect at once in every process.
CREATE TABLE wallet_managers (
  wallet_id  text NOT NULL REFERENCES wallets(id),
  identity   text NOT NULL,
  role       text NOT NULL CHECK (role IN ('owner', 'manager', 'viewer')),
  added_by   text NOT NULL,           -- the identity or owner id that added the row
  added_at   timestamptz NOT NULL,
  PRIMARY KEY (wallet_id, identity)
);
-- Sign-in looks a person up by identity across wallets.
CREATE INDEX wallet_managers_identity ON wallet_managers (identity);

-- A session's role and who opened it. Link sessions (and the owner's own provider sign-in) are 'owner' with
-- actor_id the owner id; a manager's session carries the manager's identity, and its role is re-read from
-- wallet_managers on every request (the stored role is what it was at sign-in, for the record).
ALTER TABLE dashboard_sessions ADD COLUMN role text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'manager', 'viewer'));
ALTER TABLE dashboard_sessions ADD COLUMN actor_id text;
ALTER TABLE dashboard_sessions ADD COLUMN via text NOT NULL DEFAULT 'link' CHECK (via IN ('link', 'provider'));
ALTER TABLE dashboard_sessions ADD COLUMN is_manager boolean NOT NULL DEFAULT false;

-- A manager is an actor of its own in the audit trail (a change a manager made names the manager).
ALTER TABLE wallet_audit DROP CONSTRAINT IF EXISTS wallet_audit_actor_kind_check;
ALTER TABLE wallet_audit ADD CONSTRAINT wallet_audit_actor_kind_check CHECK (actor_kind IN ('owner', 'management_key', 'operator', 'manager'));
