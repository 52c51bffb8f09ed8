// A wire format of a test's own beside the shipped ones, for as long as one reading takes.
import type { Protocol } from '../../engine/core/protocol.ts';
import { protocols } from '../../transforms/protocols/index.ts';

/** `read()` without the format `name`, then with it among the shipped formats (removed again after). */
export function withAndWithout<T>(name: string, format: Protocol, read: () => T): { with: T; without: T } {
  const without = read();
  protocols[name] = format;
  try {
    return { with: read(), without };
  } finally {
    delete protocols[name];
  }
}
