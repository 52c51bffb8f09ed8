// Bringing a finished video home: the vendor's file, fetched once into the video store (engine/videos/files.ts).
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { VideoFiles } from './files.ts';

/** Longest wait for one download of a finished video. */
export const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

/** The video arrived but the video store did not keep it. */
export class StoreRefused extends Error {
  constructor(cause: unknown) {
    super('the video store did not take the file', { cause });
  }
}

/**
 * Fetches the finished video at `url` into the file store under the job's id. `credentialFor` gives the headers
 * for an origin: the vendor's own, or none.
 */
export async function downloadVideo(
  files: VideoFiles,
  jobId: string,
  url: string,
  credentialFor: (origin: string) => Record<string, string>,
): Promise<{ name: string; bytes: number }> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new Error('the vendor gave no usable video URL');
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new Error(`unsupported video URL scheme ${target.protocol}`);
  const headers = credentialFor(target.origin);
  const res = await fetch(target, { headers, signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), redirect: 'follow' });
  if (res.status !== 200 || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`the video URL answered ${res.status}`);
  }
  let file: { name: string; bytes: number };
  try {
    file = await files.write(jobId, Readable.fromWeb(res.body as WebReadableStream<Uint8Array>));
  } catch (e) {
    throw new StoreRefused(e);
  }
  if (file.bytes === 0) {
    await files.remove(file.name);
    throw new Error('the video URL answered an empty file');
  }
  return file;
}
