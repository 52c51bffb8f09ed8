// Keys, authentication, key doors, quotas and audiences. See README.md in this folder.
export { createKeyService, keyFromHeaders, KEY_CHANNEL } from './service.ts';
export type { KeyService, KeyServiceOptions, CreateApiKeyOptions, AuthenticateOptions } from './service.ts';
export { registerKeyRoutes } from './routes.ts';
export type { KeyRouteDeps } from './routes.ts';
export { createQuotaService, periodStatus } from './quota.ts';
export type { QuotaService, KeyStatus, KeyUsage, PeriodStatus } from './quota.ts';
export type { AuthContext, Audience, KeyRow } from './types.ts';
export { usedCredits } from './types.ts';
export { API_KEY_PREFIX, MANAGEMENT_KEY_PREFIX, hashSecret, type KeyKind } from './secret.ts';
export { keyRecord, type ApiKeyRecord } from './records.ts';
export { CHAT_KEY_NAME_PREFIX } from './validate.ts';
export { listManagementKeys, closeManagementKey, type ManagementKeyRecord } from './management-keys.ts';
