// The operator commands sent to a running gateway's admin API, for when that gateway holds the embedded
// database (engine/admin/running-gateway-file.ts says where it answers). The answers are the same JSON the
// commands print when they write to the database themselves.
import type { RunningGatewayFile } from '../admin/running-gateway-file.ts';

export interface CommandValues {
  credits?: string;
  'splits-usage'?: boolean;
  'key-slots'?: string;
  owner?: string;
  vendors?: string;
  'expires-at'?: string;
  label?: string;
  name?: string;
  limit?: string;
  cursor?: string;
  sort?: string;
  csv?: boolean;
}

/** A command the admin API refused: its message, printed as the direct commands print theirs. */
class AdminRefusal extends Error {}

/** Thrown when the gateway that holds the database cannot be reached: nothing was written. */
export class GatewayUnreachable extends Error {}

/** A number when the text is one, else the text itself, so the admin API names the bad field. */
const numberOr = (v: string | undefined) => (v === undefined ? undefined : v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);

interface AdminCall {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
}

export function adminCallFor(group: string, command: string | undefined, positionals: string[], values: CommandValues): AdminCall {
  const [walletId, second] = positionals;
  const wallet = (what = '') => {
    if (!walletId || (what && !second)) throw new Error(`usage: gateway ${group} ${command} <wallet-id>${what}`);
    return `/admin/v1/wallets/${encodeURIComponent(walletId)}`;
  };
  if (group === 'wallet' && command === 'create') {
    return {
      method: 'POST',
      path: '/admin/v1/wallets',
      body: {
        credits: numberOr(values.credits),
        splits_usage: values['splits-usage'],
        key_slots: numberOr(values['key-slots']),
        owner_id: values.owner,
        name: values.name,
      },
    };
  }
  if (group === 'wallet' && command === 'rename') {
    if (values.name === undefined) throw new Error('usage: gateway wallet rename <wallet-id> --name NAME');
    return { method: 'PATCH', path: wallet(), body: { name: values.name === '' ? null : values.name } };
  }
  if (group === 'wallet' && command === 'topup') {
    if (!values.credits)
      throw new Error('usage: gateway wallet topup <wallet-id> --credits N [--vendors c,d] [--expires-at ISO] [--label NAME]');
    const vendors = values.vendors
      ?.split(',')
      .map((v) => v.trim())
      .filter(Boolean);
    // The text as typed: the gateway reads '$5' or '₩7000' with the display currency it has in force.
    return {
      method: 'POST',
      path: `${wallet()}/credits`,
      body: { credits: numberOr(values.credits), vendors, expires_at: values['expires-at'], label: values.label },
    };
  }
  if (group === 'wallet' && command === 'show') return { method: 'GET', path: wallet() };
  if (group === 'wallet' && command === 'list') {
    const query = new URLSearchParams();
    if (values.limit !== undefined) query.set('limit', values.limit);
    if (values.cursor !== undefined) query.set('cursor', values.cursor);
    if (values.sort !== undefined) query.set('sort', values.sort);
    if (values.csv) query.set('format', 'csv');
    const qs = query.toString();
    return { method: 'GET', path: `/admin/v1/wallets${qs ? `?${qs}` : ''}` };
  }
  if (group === 'wallet' && command === 'owner')
    return { method: 'POST', path: `${wallet(' <owner-id>')}/owner`, body: { owner_id: second } };
  if (group === 'wallet' && command === 'sign-in-link') return { method: 'POST', path: `${wallet()}/sign-in-link` };
  if (group === 'key' && command === 'create') return { method: 'POST', path: `${wallet()}/keys`, body: { name: values.name } };
  if (group === 'management-key' && command === 'create')
    return { method: 'POST', path: `${wallet()}/management-keys`, body: { name: values.name } };
  if (group === 'management-key' && command === 'list') return { method: 'GET', path: `${wallet()}/management-keys` };
  if (group === 'management-key' && command === 'close') {
    return { method: 'DELETE', path: `${wallet(' <key-id>')}/management-keys/${encodeURIComponent(second!)}` }; // wallet() refused a missing one
  }
  throw new Error(`unknown command: gateway ${group} ${command ?? ''}`);
}

export async function runOnGateway(gateway: RunningGatewayFile, call: AdminCall): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${gateway.url}${call.path}`, {
      method: call.method,
      headers: { authorization: `Bearer ${gateway.admin_token}`, ...(call.body ? { 'content-type': 'application/json' } : {}) },
      body: call.body ? JSON.stringify(call.body) : null,
      signal: AbortSignal.timeout(15_000),
    });
  } catch (e) {
    throw new GatewayUnreachable(`could not reach it at ${gateway.url} (${(e as Error).message})`);
  }
  const text = await res.text();
  if (res.ok && (res.headers.get('content-type') ?? '').startsWith('text/csv')) return text;
  let json: { error?: { type?: string; message?: string } } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (res.status === 401) throw new GatewayUnreachable(`its admin API refused this start's credential (HTTP 401)`);
  if (!res.ok)
    throw new AdminRefusal(json?.error ? `${json.error.type}: ${json.error.message}` : `HTTP ${res.status}: ${text.slice(0, 200)}`);
  return json;
}
