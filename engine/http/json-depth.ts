// A bound on how deeply a request body nests objects and arrays. Code that walks a body recursively
// (copying it, measuring it, encoding it for the vendor) overflows the stack on a body thousands of levels
// deep, so the depth is checked once, when the body is read, before anything is held.
import { errors, type GatewayError } from '../core/errors.ts';

/** Whether `value` nests objects and arrays more than `max` levels deep (the value itself is level 1). */
function nestsDeeperThan(value: unknown, max: number): boolean {
  // Walked with an explicit stack: a recursive walk is exactly what a deep body breaks.
  const pending: { value: unknown; level: number }[] = [{ value, level: 1 }];
  while (pending.length > 0) {
    const { value: v, level } = pending.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (level > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') pending.push({ value: child, level: level + 1 });
    }
  }
  return false;
}

/** The 400 for a body that nests deeper than `max`, or null when it does not. */
export function depthRefusal(body: unknown, max: number): GatewayError | null {
  if (!nestsDeeperThan(body, max)) return null;
  return errors.invalidRequest(`The request body nests objects and arrays more than ${max} levels deep; at most ${max} are accepted.`);
}
