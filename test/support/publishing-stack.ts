// The stack a publisher works against in the e2e tests: a fresh bucket (versioned, or without
// versions as on R2) on the local
// Ceph RGW, an S3 decoder and the edge (with an admin token) in front, and two pictures told
// apart by their pixels: the test pattern and its negative.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { ensureBucketOf, makeS3Client, type BucketKind, s3DecoderEnv, startLocalS3, type LocalS3 } from "../../infra/local/s3";
import { ROOT } from "../../infra/root";
import { startStack, type Stack } from "../../infra/local/stack";
import { meanAbsDiff, reference } from "./pixels";

export const PATTERN = path.join(ROOT, "samples/test-pattern.tif");
const JPEG_TOLERANCE = 6; // mean absolute difference per channel, 0..255

export interface PublishingStack {
  s3: LocalS3;
  client: S3Client;
  stack: Stack;
  bucket: string;
  token: string;
  /** A scratch directory; `negative` is in it. */
  dir: string;
  /** The pattern inverted, as a JPEG COG. */
  negative: string;
  stop(): Promise<void>;
}

export async function startPublishingStack(name: string, infoMaxAgeS: number, kind: BucketKind = "versioned"): Promise<PublishingStack> {
  const bucket = `${name}-${kind}-${Date.now().toString(36)}`;
  const token = `${name}-admin-token`;
  const s3 = await startLocalS3();
  const client = makeS3Client(s3);
  await ensureBucketOf(kind, client, bucket);
  const dir = await mkdtemp(path.join(tmpdir(), `tessera-${name}-`));
  const negative = path.join(dir, "negative.tif");
  execFileSync("gdal_translate", [
    "-q", "-of", "COG", "-scale", "0", "255", "255", "0", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=256", PATTERN, negative,
  ]);
  const stack = await startStack({
    decoderEnv: s3DecoderEnv(s3, bucket),
    vars: { ADMIN_TOKEN: token, INFO_MAX_AGE: String(infoMaxAgeS) },
  });
  return {
    s3, client, stack, bucket, token, dir, negative,
    async stop() {
      await stack.stop();
      client.destroy();
      await s3.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

type Region = { x: number; y: number; w: number; h: number };

/** Which picture a JPEG of `region` shows: "A" the pattern, "B" its negative, or neither. */
export async function pictureOf(body: Uint8Array, region: Region): Promise<"A" | "B" | "neither"> {
  if ((await meanAbsDiff(body, reference(region))) < JPEG_TOLERANCE) return "A";
  if ((await meanAbsDiff(body, reference(region).negate({ alpha: false }))) < JPEG_TOLERANCE) return "B";
  return "neither";
}
