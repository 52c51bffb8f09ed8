// config/vendors.yaml is the one list of vendors: its keys are the vendor ids. Every vendor named elsewhere in
// config/ must be one of them, and what billing.yaml keeps for every vendor (its framing) must cover each.
// The catalog's vendors are checked model by model (model-checks.ts).
import type { LoadedConfig } from './config.ts';
import type { Locate } from './yaml-file.ts';

/** An entry a `vendors:` list narrows: a refusal, a door's rewrite. */
interface Narrowed {
  vendors?: readonly string[] | undefined;
}

/** Problems as `file:line: reason`. */
export function vendorReferenceProblems({ config, at }: LoadedConfig): string[] {
  const problems: string[] = [];
  const known = unknownVendor(config.vendors);
  const check = (where: Locate, path: (string | number)[], vendor: string, what: string) => {
    const why = known(vendor);
    if (why) problems.push(`${where(path)}: ${what} names vendor '${vendor}', ${why}`);
  };
  const refusals = (where: Locate, path: (string | number)[], list: readonly Narrowed[] | undefined, what: string) => {
    (list ?? []).forEach((refusal, i) => {
      (refusal.vendors ?? []).forEach((v, j) => check(where, [...path, i, 'vendors', j], v, what));
    });
  };
  for (const [name, door] of Object.entries(config.doors)) {
    door.serves.vendors.forEach((v, i) => check(at.doors, [name, 'serves', 'vendors', i], v, `door '${name}' serves`));
    for (const v of Object.keys(door.vendor_protocol)) {
      if (v !== '*') check(at.doors, [name, 'vendor_protocol', v], v, `door '${name}' vendor_protocol`);
    }
    refusals(at.doors, [name, 'refuse'], door.refuse, `door '${name}' refusal`);
    refusals(at.doors, [name, 'rewrite'], door.rewrite, `door '${name}' rewrite`);
  }
  for (const [name, rule] of Object.entries(config.rules)) {
    refusals(at.rules, [name, 'refuses'], rule.refuses, `rule '${name}' refusal`);
    refusals(at.rules, [name, 'vendor_refuses'], rule.vendor_refuses, `rule '${name}' vendor refusal`);
  }
  const billing = config.billing;
  billing.plan_restricted_vendors.forEach((v, i) => check(at.billing, ['plan_restricted_vendors', i], v, 'plan_restricted_vendors'));
  const reservation = billing.reservation;
  reservation.cache_writes_when_marked.forEach((v, i) =>
    check(at.billing, ['reservation', 'cache_writes_when_marked', i], v, 'reservation.cache_writes_when_marked'),
  );
  for (const v of Object.keys(reservation.output_cap_written ?? {})) {
    check(at.billing, ['reservation', 'output_cap_written', v], v, 'reservation.output_cap_written');
  }
  for (const field of ['framing_per_call', 'framing_per_message'] as const) {
    const table = reservation[field];
    for (const v of Object.keys(table)) check(at.billing, ['reservation', field, v], v, `reservation.${field}`);
    for (const v of Object.keys(config.vendors)) {
      if (!Object.hasOwn(table, v)) {
        problems.push(
          `${at.billing(['reservation', field])}: reservation.${field} has no entry for vendor '${v}' (config/vendors.yaml); every vendor needs one`,
        );
      }
    }
  }
  return problems;
}

/** Why `vendor` is no vendor of config/vendors.yaml, or undefined when it is one. */
export function unknownVendor(vendors: Record<string, unknown>): (vendor: string) => string | undefined {
  const ids = Object.keys(vendors);
  return (vendor) =>
    Object.hasOwn(vendors, vendor) ? undefined : `which config/vendors.yaml does not define (its vendors: ${ids.join(', ')})`;
}
