// Where a webhook may be sent: an owner chooses the URL, so without this the gateway would post into its own
// network on their behalf. Addresses are checked at registration and again inside each delivery's connection, so a
// name rebound to 127.0.0.1 since (DNS rebinding) is refused (docs/api.md, "Webhooks and alerts").
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { errors } from '../core/errors.ts';

/** Resolves a host to all its addresses (node:dns lookup with `all: true`); injectable for tests. */
export type Resolve = (host: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

const V4_REFUSED: [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

const v4ToInt = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);

function v4Refused(ip: string): boolean {
  const n = v4ToInt(ip);
  return V4_REFUSED.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(v4ToInt(base) / 2 ** (32 - bits)));
}

type V6Groups = [number, number, number, number, number, number, number, number];

/** The 8 groups of an IPv6 address as numbers (handles `::` and a dotted IPv4 tail); `ip` is one `isIP` calls 6. */
function v6Groups(ip: string): V6Groups {
  let text = ip.split('%')[0]!.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = dotted[1]!;
    const n = v4ToInt(v4);
    text = `${text.slice(0, -v4.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  return [...h, ...new Array(8 - h.length - t.length).fill(0), ...t] as V6Groups;
}

const embeddedV4 = (g: V6Groups) => `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;

function v6Refused(ip: string): boolean {
  const g = v6Groups(ip);
  const zeroTo = (i: number) => g.slice(0, i).every((x) => x === 0);
  if (zeroTo(8)) return true; // :: unspecified
  if (zeroTo(7) && g[7] === 1) return true; // ::1 loopback
  if (zeroTo(5) && g[5] === 0xffff) return v4Refused(embeddedV4(g)); // ::ffff:a.b.c.d IPv4-mapped
  if (zeroTo(6)) return true; // ::a.b.c.d IPv4-compatible (deprecated): never a public destination
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) return v4Refused(embeddedV4(g)); // NAT64
  if (g[0] === 0x2002) return v4Refused(`${g[1] >> 8}.${g[1] & 255}.${g[2] >> 8}.${g[2] & 255}`); // 6to4
  // Everything else outside global unicast (2000::/3) is refused: unique-local fc00::/7, link-local fe80::/10,
  // multicast ff00::/8, the IPv4-translated ::ffff:0:0:0/96, local NAT64 64:ff9b:1::/48, discard 100::/64, SRv6
  // 5f00::/16, and whatever is assigned later: an address must be shown public, not merely not known private.
  if ((g[0] & 0xe000) !== 0x2000) return true;
  if (g[0] === 0x2001 && g[1] < 0x0200) return true; // 2001::/23 IETF protocol assignments: Teredo, ORCHID, benchmarking
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // 2001:db8::/32 documentation
  if (g[0] === 0x3fff && g[1] < 0x1000) return true; // 3fff::/20 documentation
  return false;
}

/** Whether an address is private, loopback, link-local, CGNAT, multicast, unique-local or otherwise not public. */
export function isRefusedAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return v4Refused(ip);
  if (family === 6) return v6Refused(ip);
  return true; // not an address at all: never connect to it
}

class AddressRefused extends Error {
  override name = 'AddressRefused';
}

/** Why a host name may not receive webhooks, the same whatever its lookup gave: it names what the owner typed only. */
const unreachable = (host: string) => `url: the gateway delivers only to public addresses it can reach; '${host}' is not one.`;

export interface AddressGuard {
  readonly allowPrivate: boolean;
  /** 400 naming `url` when the URL may not receive webhooks (scheme, credentials, a host that resolves privately or not at all). */
  checkUrl(raw: string): Promise<URL>;
  /** For undici's `connect.lookup`: resolves, and fails the connection when any address is refused. */
  lookup: LookupFunction;
}

export function createAddressGuard(opts: { allowPrivate: boolean; resolve?: Resolve | undefined }): AddressGuard {
  const resolve = opts.resolve ?? systemResolve;
  const refusedAmong = (addresses: LookupAddress[]) => (opts.allowPrivate ? undefined : addresses.find((a) => isRefusedAddress(a.address)));
  return {
    allowPrivate: opts.allowPrivate,
    async checkUrl(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw errors.invalidRequest('url must be an absolute http or https URL.', 'url');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw errors.invalidRequest('url must use https (or http).', 'url');
      if (url.username || url.password)
        throw errors.invalidRequest('url must not carry a user name or password; the signature authenticates deliveries.', 'url');
      if (raw.length > 2000) throw errors.invalidRequest('url must be at most 2000 characters.', 'url');
      const host = url.hostname.replace(/^\[|\]$/g, '');
      // An address the owner typed may be named back: it tells them nothing they did not write.
      if (isIP(host)) {
        if (refusedAmong([{ address: host, family: isIP(host) }]))
          throw errors.invalidRequest(
            `url: the host '${host}' resolves to ${host}, a private, loopback or reserved address; webhooks go to public addresses only.`,
            'url',
          );
        return url;
      }
      // A name is refused in one sentence whether it resolves privately or not at all, naming no address: otherwise a
      // management key could map the operator's internal DNS through the answers.
      const addresses = await resolve(host).catch(() => [] as LookupAddress[]);
      if (addresses.length === 0 || refusedAmong(addresses)) throw errors.invalidRequest(unreachable(host), 'url');
      return url;
    },
    lookup(hostname, options, callback) {
      const cb = callback as (...args: unknown[]) => void; // one address, or all of them when options.all
      const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
      // The refusal is stored in the owner's delivery log: like checkUrl's, it names no address and reads the same
      // whether the name resolved privately or not at all.
      const refused = () => cb(new AddressRefused(`${hostname} is not a public address the gateway can reach`));
      resolve(hostname).then((addresses) => {
        const wanted = family ? addresses.filter((a) => a.family === family) : addresses;
        if (wanted.length === 0 || refusedAmong(wanted)) return refused();
        if (options.all) cb(null, wanted);
        else cb(null, wanted[0]!.address, wanted[0]!.family);
      }, refused);
    },
  };
}

/** For a delivery to an address written in the URL itself (no lookup happens, so connect.lookup never sees it). */
export function literalRefused(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return !allowPrivate && isIP(host) && isRefusedAddress(host) ? host : null;
}
