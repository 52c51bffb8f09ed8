-- An ownership generation: a wallet's counter of owner changes. Sign-in links and dashboard sessions keep the
-- generation they were issued under and work only while it is still the wallet's, so an owner change ends them
-- for good: comparing owner ids alone let a returning owner (X -> Y -> X) revive X's old sessions and links.
ALTER TABLE wallets ADD COLUMN owner_generation bigint NOT NULL DEFAULT 0;
ALTER TABLE dashboard_sign_in_tokens ADD COLUMN owner_generation bigint NOT NULL DEFAULT 0;
ALTER TABLE dashboard_sessions ADD COLUMN owner_generation bigint NOT NULL DEFAULT 0;
