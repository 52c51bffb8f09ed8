// The S3 store, loaded at its first use: the AWS SDK is about 24 MB of every process's memory, and most
// gateways keep their videos on disk. A gateway that names a bucket loads it with its first video.

import type { VideoFiles } from './files.ts';
import { createS3VideoFiles } from './files-s3.ts';
import { type S3StoreSetting, s3StoreWhere } from './video-store-setting.ts';

export function s3VideoFilesOnDemand(setting: S3StoreSetting): VideoFiles {
  let loading: Promise<VideoFiles> | undefined;
  let loaded: VideoFiles | undefined;
  const store = () =>
    (loading ??= createS3VideoFiles(setting).then((files) => {
      loaded = files;
      return files;
    }));
  return {
    where: s3StoreWhere(setting),
    write: async (id, source) => (await store()).write(id, source),
    open: async (name) => (await store()).open(name),
    directUrl: async (name, ttlSeconds) => (await store()).directUrl(name, ttlSeconds),
    remove: async (name) => (await store()).remove(name),
    close: () => loaded?.close(),
  };
}
