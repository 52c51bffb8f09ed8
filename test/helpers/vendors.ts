// The repository's vendors: config/vendors.yaml's keys, the one list of them (the engine keeps no other).
import { vendorIdsIn } from '../../engine/catalog/config.ts';

export const VENDORS: readonly string[] = vendorIdsIn('config');
