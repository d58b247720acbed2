// The project's local S3 for tests, `npm start` and benches: a single-node Ceph RGW started by
// s3-up.sh beside this file (see that script for the state dir, port and key variables).
//
// Ownership rule: if something already answers on the endpoint (a developer ran s3-up.sh, or
// TESSERA_S3_ENDPOINT points at another store), it is reused and stop() leaves it running;
// only an instance this call started is stopped by stop() (via s3-down.sh, PID files only).
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  BucketVersioningStatus,
  CreateBucketCommand,
  GetBucketVersioningCommand,
  PutBucketVersioningCommand,
  S3Client,
} from "@aws-sdk/client-s3";

const HERE = dirname(fileURLToPath(import.meta.url));

export interface LocalS3Config {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export interface LocalS3 extends LocalS3Config {
  /** True when startLocalS3 started the daemons (and stop() will stop them). */
  readonly owned: boolean;
  stop(): Promise<void>;
}

/** Settings from the environment, with the same defaults as s3-up.sh. */
export function localS3Config(env: NodeJS.ProcessEnv = process.env): LocalS3Config {
  const port = env.TESSERA_S3_PORT ?? "7480";
  return {
    endpoint: env.TESSERA_S3_ENDPOINT ?? `http://127.0.0.1:${port}`,
    accessKeyId: env.TESSERA_S3_ACCESS_KEY ?? "tessera",
    secretAccessKey: env.TESSERA_S3_SECRET_KEY ?? "tessera-secret",
  };
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint + "/", { signal: AbortSignal.timeout(1000) });
    return true; // any HTTP answer (RGW says 200 anonymous ListBuckets) means a server is there
  } catch {
    return false;
  }
}

function runScript(name: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [join(HERE, name)], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`${name} exited ${code}: ${err.trim()}`)),
    );
  });
}

/**
 * Starts (or reuses, see the ownership rule above) the local S3 and returns its endpoint and keys.
 * Env: TESSERA_S3_ENDPOINT (use this store, never start one), TESSERA_S3_DIR, TESSERA_S3_PORT,
 * TESSERA_S3_ACCESS_KEY, TESSERA_S3_SECRET_KEY, TESSERA_S3_MON_PORT (passed to s3-up.sh).
 */
export async function startLocalS3(env: NodeJS.ProcessEnv = process.env): Promise<LocalS3> {
  const cfg = localS3Config(env);
  if (env.TESSERA_S3_ENDPOINT || (await answers(cfg.endpoint))) {
    return { ...cfg, owned: false, stop: async () => {} };
  }
  const childEnv = { ...process.env, ...env };
  // The daemons fork away from us: if the process dies without stop() (a crashed test run),
  // this exit hook still stops them. Sync, because "exit" handlers cannot await.
  const onExit = () => {
    spawnSync("bash", [join(HERE, "s3-down.sh")], { env: childEnv, stdio: "ignore" });
  };
  process.once("exit", onExit);
  let endpoint: string;
  try {
    endpoint = (await runScript("s3-up.sh", childEnv)).split("\n").pop()!;
  } catch (e) {
    await runScript("s3-down.sh", childEnv).catch(() => {}); // s3-up cleans up too; be sure
    process.off("exit", onExit);
    throw e;
  }
  let stopped = false;
  return {
    ...cfg,
    endpoint,
    owned: true,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      process.off("exit", onExit);
      await runScript("s3-down.sh", childEnv);
    },
  };
}

/** The environment of a decoder (or the tessera command) reading `bucket` on this store. */
export const s3DecoderEnv = (cfg: LocalS3Config, bucket: string): Record<string, string> => ({
  TESSERA_SOURCE: "s3",
  TESSERA_S3_ENDPOINT: cfg.endpoint,
  TESSERA_S3_BUCKET: bucket,
  AWS_ACCESS_KEY_ID: cfg.accessKeyId,
  AWS_SECRET_ACCESS_KEY: cfg.secretAccessKey,
});

/** An S3Client configured for RGW (and fine for AWS S3 too). */
export function makeS3Client(cfg: LocalS3Config): S3Client {
  return new S3Client({
    endpoint: cfg.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
    forcePathStyle: true, // RGW on 127.0.0.1 has no virtual-host bucket DNS
    // RGW 16.2 answers 411 MissingContentLength to the SDK's default aws-chunked uploads with
    // trailing checksums; only compute/validate checksums where an operation requires them.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** Creates `bucket` if needed (idempotent). */
async function ensureBucket(client: S3Client, bucket: string): Promise<void> {
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    const name = (e as { name?: string }).name;
    if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw e;
  }
}

/** Creates `bucket` if needed and turns versioning on (idempotent). */
export async function ensureVersionedBucket(client: S3Client, bucket: string): Promise<void> {
  await ensureBucket(client, bucket);
  const v = await client.send(new GetBucketVersioningCommand({ Bucket: bucket }));
  if (v.Status !== BucketVersioningStatus.Enabled) {
    await client.send(
      new PutBucketVersioningCommand({
        Bucket: bucket,
        VersioningConfiguration: { Status: BucketVersioningStatus.Enabled },
      }),
    );
  }
}

/**
 * Creates `bucket` with versioning never turned on, as an R2 bucket is; one that has had it on
 * (it can only be suspended, never off again) is refused.
 */
export async function ensureUnversionedBucket(client: S3Client, bucket: string): Promise<void> {
  await ensureBucket(client, bucket);
  const v = await client.send(new GetBucketVersioningCommand({ Bucket: bucket }));
  if (v.Status !== undefined) throw new Error(`bucket ${bucket} has had versioning on (${v.Status}): use another`);
}

/** A bucket of either kind the publisher handles: with S3 versions, or without (R2). */
export type BucketKind = "versioned" | "unversioned";

export const ensureBucketOf = (kind: BucketKind, client: S3Client, bucket: string): Promise<void> =>
  kind === "versioned" ? ensureVersionedBucket(client, bucket) : ensureUnversionedBucket(client, bucket);
