// GATEWAY_VIDEO_STORE: which store keeps delivered videos (this host's data folder, or an S3-compatible bucket every
// host reaches). Read once at start, so a value the gateway cannot use stops the start rather than every delivery.
import { SettingError } from '../core/setting-error.ts';

type Env = Record<string, string | undefined>;

export interface S3StoreSetting {
  kind: 's3';
  bucket: string;
  /** Key prefix without a trailing slash; '' for the bucket's root. */
  prefix: string;
  region: string;
  /** AWS_ENDPOINT_URL_S3: an S3-compatible server, addressed path-style. */
  endpoint?: string;
  /** From AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; absent: the SDK's own chain (instance role, profile). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

export type VideoStoreSetting = { kind: 'file' } | S3StoreSetting;

const VARIABLE = 'GATEWAY_VIDEO_STORE';
// S3's bucket naming rule: 3 to 63 lower-case letters, digits, dots and hyphens, a letter or digit at each end.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
// A region S3-compatible servers accept when the operator names none for a custom endpoint.
const CUSTOM_ENDPOINT_REGION = 'us-east-1';

/** The store named by GATEWAY_VIDEO_STORE; throws a sentence naming the variable when it cannot be used. */
export function videoStoreFromEnv(env: Env): VideoStoreSetting {
  const raw = env[VARIABLE]?.trim() ?? '';
  if (raw === '' || raw === 'file') return { kind: 'file' };
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(raw);
  if (!m) throw new SettingError(`${VARIABLE} must be 'file' or s3://BUCKET[/PREFIX], not '${raw}'`);
  const bucket = m[1]!;
  if (!BUCKET.test(bucket) || bucket.includes('..')) {
    throw new SettingError(`${VARIABLE}: '${bucket}' is not an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`);
  }
  const prefix = (m[2] ?? '').replace(/\/+$/, '');
  if (prefix.split('/').some((part, _i, all) => (part === '' && all.length > 1) || part === '.' || part === '..')) {
    throw new SettingError(`${VARIABLE}: the prefix '${prefix}' has an empty, '.' or '..' part`);
  }
  const endpoint = endpointOf(env);
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || (endpoint ? CUSTOM_ENDPOINT_REGION : '');
  if (!region) throw new SettingError(`${VARIABLE}=${raw} needs AWS_REGION (the bucket's region)`);
  return { kind: 's3', bucket, prefix, region, ...(endpoint ? { endpoint } : {}), ...credentialsOf(env, raw) };
}

function endpointOf(env: Env): string | undefined {
  const raw = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SettingError(`${VARIABLE}: AWS_ENDPOINT_URL_S3 '${raw}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SettingError(`${VARIABLE}: AWS_ENDPOINT_URL_S3 '${raw}' is not an http(s) address`);
  return raw;
}

function credentialsOf(env: Env, raw: string): Pick<S3StoreSetting, 'credentials'> {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId && !secretAccessKey) return {};
  if (!accessKeyId || !secretAccessKey) {
    throw new SettingError(`${VARIABLE}=${raw}: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; only one is set`);
  }
  return { credentials: { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } };
}

/** The bucket and prefix as the start banner and logs name them (never a credential). */
export const s3StoreWhere = (setting: S3StoreSetting): string => `s3://${setting.bucket}${setting.prefix ? `/${setting.prefix}` : ''}`;
