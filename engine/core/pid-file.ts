// Where `npm start` leaves its process id, so `npx gateway reload` can signal the node process itself:
// operators often only know npm's pid, and a SIGHUP to npm kills npm and leaves node running unreloaded.
import { isAbsolute, join, resolve } from 'node:path';

const PID_FILE_NAME = 'gateway.pid';

/** GATEWAY_DATA_DIR/gateway.pid; for an in-memory database (no folder), gateway.pid in the working folder. */
export function pidFilePath(env: Record<string, string | undefined>): string {
  const dataDir = env.GATEWAY_DATA_DIR ?? './data';
  if (dataDir.startsWith('memory://')) return resolve(PID_FILE_NAME);
  return isAbsolute(dataDir) ? join(dataDir, PID_FILE_NAME) : resolve(dataDir, PID_FILE_NAME);
}
