-- A wallet's balance is the sum of its lots: the wallet's own copy of that sum is gone, so each batch of
-- charges writes one row fewer and no view can read a copy that disagrees with the lots.
ALTER TABLE wallets DROP COLUMN available_nano;
ALTER TABLE wallets DROP COLUMN reserved_nano;
