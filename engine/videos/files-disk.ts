// The video store of one host (GATEWAY_VIDEO_STORE unset or `file`): `GATEWAY_DATA_DIR/videos/<video id>.mp4`,
// or a temporary folder when the data directory is `memory://` (removed again on close). Files are written to a
// temporary name and renamed, so a reader never sees half a file.

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { rename, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { privateDir } from '../core/private-dir.ts';
import type { VideoFiles } from './files.ts';

export function createDiskVideoFiles(dataDir: string): VideoFiles {
  const temporary = dataDir === 'memory://';
  const dir = temporary ? mkdtempSync(join(tmpdir(), 'gateway-videos-')) : join(dataDir, 'videos');
  privateDir(dir);
  const pathOf = (name: string) => {
    if (!/^[\w.-]+$/.test(name) || name.startsWith('.')) throw new Error(`not a video file name: ${name}`);
    return join(dir, name);
  };

  return {
    where: dir,
    async write(id, source) {
      const name = `${id}.mp4`;
      const part = pathOf(`${name}.${randomBytes(4).toString('hex')}.part`);
      try {
        await pipeline(source, createWriteStream(part));
        const { size } = await stat(part);
        await rename(part, pathOf(name));
        return { name, bytes: size };
      } catch (e) {
        await unlink(part).catch(() => undefined);
        throw e;
      }
    },
    async open(name) {
      try {
        const { size } = await stat(pathOf(name));
        return { stream: createReadStream(pathOf(name)), bytes: size };
      } catch {
        return null;
      }
    },
    // The signed /file door serves these; no other host can reach this folder.
    directUrl: async () => null,
    async remove(name) {
      await unlink(pathOf(name)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    },
    close() {
      if (temporary) rmSync(dir, { recursive: true, force: true });
    },
  };
}
