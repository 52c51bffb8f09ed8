-- A wallet's name as the operator gives it (a school's name, such as 서울한빛중학교): an office running dozens
-- of schools could not tell them apart by their ids. Optional: wallets made before stay unnamed (null).
ALTER TABLE wallets ADD COLUMN name text;
