// Where delivered videos live, as the worker and the doors see it. Two stores implement it (files-disk.ts,
// files-s3.ts); index.ts opens the one GATEWAY_VIDEO_STORE names (video-store-setting.ts).
import type { Readable } from 'node:stream';

export interface VideoFiles {
  /** Where the files go, for the start banner and logs (never a credential). */
  readonly where: string;
  /** Streams `source` into a new file for video `id`; returns the stored file's name and size. */
  write(id: string, source: Readable): Promise<{ name: string; bytes: number }>;
  open(name: string): Promise<{ stream: Readable; bytes: number } | null>;
  /**
   * A short-lived address the client fetches the file from without the gateway, or null when the gateway
   * serves its files itself (the signed /file door).
   */
  directUrl(name: string, ttlSeconds: number): Promise<string | null>;
  /** Deletes the file; a file already gone is fine. */
  remove(name: string): Promise<void>;
  close(): void;
}
