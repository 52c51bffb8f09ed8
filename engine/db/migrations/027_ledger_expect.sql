-- A batch decided on the rows as its process last wrote them checks, under their locks, that they still are
-- (engine/money/batch-sql.ts `expectRows`). A different SQLSTATE from ledger_check's: this is no broken invariant,
-- only another writer having been first, and the batch runs again reading its rows.
CREATE OR REPLACE FUNCTION ledger_expect(ok boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION 'stale rows: another writer changed them since this process wrote them' USING ERRCODE = 'GWSTL';
  END IF;
END
$$;
