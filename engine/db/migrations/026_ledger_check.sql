-- An invariant the ledger's batch write checks inside its own statement (engine/money/batch-sql.ts): the statement
-- fails, and with it the transaction, so its COMMIT can be sent with it rather than after a check in the process.
CREATE OR REPLACE FUNCTION ledger_check(ok boolean, broken text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION 'ledger: %', broken USING ERRCODE = 'XX000';
  END IF;
END
$$;
