// Which lots may pay and in which order: soonest expiry first (money that lapses is spent before money that
// keeps), then restricted lots before unrestricted, then oldest. Shared by policy.ts and lot-expiry.ts, and pure.

interface Orderable {
  vendors: string[] | null;
  seq: bigint;
  expiresAt?: Date | null;
}

export const drawOrder = (a: Orderable, b: Orderable): number => {
  const ea = a.expiresAt ? a.expiresAt.getTime() : Number.POSITIVE_INFINITY;
  const eb = b.expiresAt ? b.expiresAt.getTime() : Number.POSITIVE_INFINITY;
  if (ea !== eb) return ea < eb ? -1 : 1;
  const ra = a.vendors === null ? 1 : 0;
  const rb = b.vendors === null ? 1 : 0;
  if (ra !== rb) return ra - rb;
  return a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0;
};

/** Whether a lot may pay for a vendor's model, whatever its balance. */
export const lotServes = (lot: { vendors: string[] | null }, vendor: string): boolean =>
  lot.vendors === null || lot.vendors.includes(vendor);

/** From its `expiresAt` on, a lot pays for nothing new (a call's own hold already on it may still be charged). */
export const lotExpired = (lot: { expiresAt?: Date | null }, now: Date): boolean =>
  lot.expiresAt != null && lot.expiresAt.getTime() <= now.getTime();
