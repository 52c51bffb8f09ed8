// `npm ci` builds dist/ once (bin/build.mjs as `prepare`); `npm start` then runs it without loading the build tool,
// and builds again only when a source it was built from changed. Shown on a small project in a temporary folder
// whose node_modules holds esbuild while it builds and nothing afterwards: a start that still loaded esbuild fails.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
const run = (script: string) => spawnSync(process.execPath, [join(dir, 'bin', script)], { cwd: dir, encoding: 'utf8' });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-build-once-'));
  for (const f of ['build.mjs', 'build-options.mjs', 'start.mjs', 'gateway.mjs']) cpSync(join('bin', f), join(dir, 'bin', f));
  mkdirSync(join(dir, 'engine', 'cli'), { recursive: true });
  writeFileSync(join(dir, 'engine', 'main.ts'), "import { word } from './word.ts';\nconsole.log('gateway ' + word);\n");
  writeFileSync(join(dir, 'engine', 'word.ts'), "export const word: string = 'one';\n");
  writeFileSync(join(dir, 'engine', 'cli', 'cli.ts'), "console.log('cli');\n");
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(resolve('node_modules', 'esbuild'), join(dir, 'node_modules', 'esbuild'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('dist/ is built once', () => {
  it('npm ci builds the gateway and the command line; a start on unchanged sources runs them without esbuild', () => {
    expect(run('build.mjs').status).toBe(0);
    unlinkSync(join(dir, 'node_modules', 'esbuild'));
    const start = run('start.mjs');
    expect(start.stderr).toBe('');
    expect(start.stdout).toBe('gateway one\n');
    expect(run('gateway.mjs').stdout).toBe('cli\n');
  });

  it('an edit to a file the build read is built again at the next start, and says how when it cannot be', () => {
    writeFileSync(join(dir, 'engine', 'word.ts'), "export const word: string = 'two';\n");
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(dir, 'engine', 'word.ts'), later, later);
    const withoutEsbuild = run('start.mjs');
    expect(withoutEsbuild.status).not.toBe(0);
    expect(withoutEsbuild.stderr).toContain('older than the sources');
    expect(withoutEsbuild.stderr).toContain('npm run build');
    symlinkSync(resolve('node_modules', 'esbuild'), join(dir, 'node_modules', 'esbuild'));
    expect(run('start.mjs').stdout).toBe('gateway two\n');
  });
});
