-- A lot's name as the operator gave it at its top-up ("2026 2학기"), so a school reads its term budgets by name
-- on the wallet page and in the admin view, not by lot id. Optional; the money never reads it.
ALTER TABLE credit_lots ADD COLUMN IF NOT EXISTS label text CHECK (label IS NULL OR char_length(label) BETWEEN 1 AND 40);
