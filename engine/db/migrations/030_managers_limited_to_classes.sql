-- A manager once limited to classes stays limited when their classes go, whether taken away or deleted: taking a
-- class from a teacher never widens what they may see (engine/dashboard/group-scope.ts). Before this, a manager
-- left with no class (a deleted class counted as none) was read as never limited, and managed the whole wallet.
ALTER TABLE wallet_managers ADD COLUMN IF NOT EXISTS limited_to_classes boolean NOT NULL DEFAULT false;
UPDATE wallet_managers m SET limited_to_classes = true
 WHERE EXISTS (SELECT 1 FROM wallet_manager_groups g WHERE g.wallet_id = m.wallet_id AND g.identity = m.identity);
