// A real `npm start`-like child process on the embedded database and the bundled simulator, for the tests of
// signals, the PID file and the reload command.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/free-port.ts';
import { waitForOutput } from '../helpers/process-output.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';

export interface ChildGateway {
  child: ChildProcess;
  base: string;
  dataDir: string;
  tree: ReturnType<typeof tempCatalogTree>;
  out: { text: string };
  apiKey: string;
  exited: Promise<number | null>;
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  remove(): void;
}

export interface ChildGatewayOptions {
  /** Edits the child's own copy of catalog/ and config/ before it starts. */
  prepare?: (tree: ReturnType<typeof tempCatalogTree>) => void;
  /** The key its callers use. Without it the child must print a development key (embedded database only). */
  apiKey?: string;
  /** False for a start that is expected to fail: returns without waiting for the banner. */
  waitForBanner?: boolean;
  /** Listen on this port (a gateway started again where the one before it was killed); default a random one. */
  port?: number;
  /**
   * An existing data folder (the embedded database of a gateway killed before): used as it is and left in
   * place by remove(), which deletes only a folder this start made.
   */
  dataDir?: string | undefined;
}

export async function startChildGateway(env: Record<string, string> = {}, opts: ChildGatewayOptions = {}): Promise<ChildGateway> {
  const tree = tempCatalogTree();
  opts.prepare?.(tree);
  const ownDataDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'gw-ops-'));
  const removeDataDir = () => ownDataDir && rmSync(dataDir, { recursive: true, force: true });
  const port = opts.port ?? (await freePort());
  const out = { text: '' };
  const child = spawn(process.execPath, ['--import', 'tsx', 'engine/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      GATEWAY_DATA_DIR: dataDir,
      GATEWAY_CONFIG_DIR: tree.config,
      GATEWAY_CATALOG_DIR: tree.catalog,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out.text += d));
  child.stderr!.on('data', (d) => (out.text += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const waitFor = (pattern: RegExp, ms = 45_000) => waitForOutput(out, pattern, ms);
  let apiKey: string;
  try {
    apiKey = opts.apiKey ?? (await waitFor(/API key:\s+(sk-svc-\S+)/))[1]!;
    if (opts.apiKey && opts.waitForBanner !== false) await waitFor(/gateway listening on/);
  } catch (e) {
    // Not handed to the test, so nothing else would stop it: it would outlive the run.
    child.kill('SIGKILL');
    tree.remove();
    removeDataDir();
    throw e;
  }
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    dataDir,
    tree,
    out,
    apiKey,
    exited,
    waitFor,
    remove() {
      child.kill('SIGKILL');
      tree.remove();
      removeDataDir();
    },
  };
}
