// Keys, authentication, key doors, quotas and audiences. See README.md in this folder.
export { createKeyService, keyFromHeaders } from './service.ts';
export type { KeyService } from './service.ts';
export { registerKeyRoutes } from './routes.ts';
export type { AuthContext, Audience } from './types.ts';
export type { DayHeld } from './quota.ts';
export { usedCredits } from './types.ts';
export { hashSecret } from './secret.ts';
export { listManagementKeys, closeManagementKey } from './management-keys.ts';
