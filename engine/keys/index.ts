// Keys, authentication, key doors, quotas and audiences. See README.md in this folder.

export { DayHolds } from './day-holds.ts';
export type { KeyDays } from './key-use.ts';
export { lockKeys, readKeyStandings } from './key-use.ts';
export { closeManagementKey, listManagementKeys } from './management-keys.ts';
export type { DayHeld } from './quota.ts';
export { registerKeyRoutes } from './routes.ts';
export { hashSecret } from './secret.ts';
export type { KeyService } from './service.ts';
export { createKeyService, keyFromHeaders } from './service.ts';
export type { Audience, AuthContext } from './types.ts';
export { usedCredits } from './types.ts';
