// The video store many hosts share (GATEWAY_VIDEO_STORE=s3://BUCKET[/PREFIX]): objects in an S3-compatible
// bucket, uploaded as the vendor's download arrives (lib-storage's Upload holds a few parts, never the whole
// video), fetched by clients at a presigned address, deleted by whichever process deletes or sweeps.
import { randomBytes } from 'node:crypto';
import { pipeline, type Readable, Transform } from 'node:stream';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { VideoFiles } from './files.ts';
import { type S3StoreSetting, s3StoreWhere } from './video-store-setting.ts';

/** Upload part size: S3's minimum, so an upload holds little in memory. */
const PART_BYTES = 5 * 1024 * 1024;
/** Parts sent at once while the download continues. */
const PARTS_IN_FLIGHT = 2;
/** A store that does not answer fails the delivery attempt instead of holding the job's lease. */
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 60_000;

export async function createS3VideoFiles(setting: S3StoreSetting): Promise<VideoFiles> {
  // Imported here rather than at the top: the bundle `npm start` runs would hoist a top-level import into every
  // process's start, and the SDK is about 24 MB of memory that a gateway storing videos on disk never uses.
  const [{ DeleteObjectCommand, GetObjectCommand, S3Client }, { Upload }, { getSignedUrl }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/lib-storage'),
    import('@aws-sdk/s3-request-presigner'),
  ]);
  const config: S3ClientConfig = {
    region: setting.region,
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: IDLE_TIMEOUT_MS },
    ...(setting.endpoint ? { endpoint: setting.endpoint, forcePathStyle: true } : {}),
    ...(setting.credentials ? { credentials: setting.credentials } : {}),
  };
  const client = new S3Client(config);
  const Bucket = setting.bucket;
  const keyOf = (name: string) => {
    if (!/^[\w.-]+$/.test(name) || name.startsWith('.')) throw new Error(`not a video file name: ${name}`);
    return setting.prefix ? `${setting.prefix}/${name}` : name;
  };

  return {
    where: s3StoreWhere(setting),
    async write(id, source) {
      // A name of its own per upload: two processes delivering one job (a lease that lapsed mid-download) each
      // remove only their own object when the other wins.
      const name = `${id}.${randomBytes(4).toString('hex')}.mp4`;
      let bytes = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(null, chunk);
        },
      });
      // A download that breaks fails the upload (the Body errors), which then aborts its parts.
      pipeline(source, counted, () => undefined);
      const upload = new Upload({
        client,
        // Kept on the object, so the presigned download carries them on every S3-compatible server.
        params: {
          Bucket,
          Key: keyOf(name),
          Body: counted,
          ContentType: 'video/mp4',
          ContentDisposition: `attachment; filename="${id}.mp4"`,
        },
        partSize: PART_BYTES,
        queueSize: PARTS_IN_FLIGHT,
      });
      try {
        await upload.done();
      } catch (e) {
        source.destroy();
        throw e;
      }
      return { name, bytes };
    },
    async open(name) {
      try {
        const got = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(name) }));
        return { stream: got.Body as Readable, bytes: Number(got.ContentLength ?? 0) };
      } catch (e) {
        if ((e as { name?: string }).name === 'NoSuchKey') return null;
        throw e;
      }
    },
    directUrl(name, ttlSeconds) {
      return getSignedUrl(client, new GetObjectCommand({ Bucket, Key: keyOf(name) }), { expiresIn: ttlSeconds });
    },
    async remove(name) {
      // S3 answers a delete of a missing key as done.
      await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(name) }));
    },
    close() {
      client.destroy();
    },
  };
}
