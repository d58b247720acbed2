// The decoder's configuration, read from the environment (variables documented in main.ts).
// Every bad value is a ConfigError naming its variable.

import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { S3Client } from "@aws-sdk/client-s3";
import { LocalCatalog } from "./source/local";
import { S3SourceCatalog } from "./source/s3";
import type { SourceCatalog } from "./source/source";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

export class ConfigError extends Error {}

export interface DecoderConfig {
  host: string;
  port: number;
  secret: string;
  capacity: number;
  catalog: SourceCatalog;
}

/** Reads and validates the decoder's environment; throws ConfigError naming the bad variable. */
export function readConfig(env: NodeJS.ProcessEnv = process.env): DecoderConfig {
  const secret = env.TESSERA_DECODER_SECRET;
  if (!secret) throw new ConfigError("TESSERA_DECODER_SECRET is required (the HMAC secret shared with the edge)");
  return {
    host: env.TESSERA_DECODER_HOST || "127.0.0.1",
    port: integer(env, "TESSERA_DECODER_PORT", 9100, 0, 65535),
    secret,
    capacity: integer(env, "TESSERA_DECODER_CAPACITY", availableParallelism(), 1, 1_000_000),
    catalog: catalogFrom(env),
  };
}

function catalogFrom(env: NodeJS.ProcessEnv): SourceCatalog {
  const kind = env.TESSERA_SOURCE || "local";
  if (kind === "local") return new LocalCatalog(env.TESSERA_DATA_DIR || `${REPO_ROOT}samples`);
  if (kind === "s3") {
    const bucket = env.TESSERA_S3_BUCKET;
    if (!bucket) throw new ConfigError("TESSERA_S3_BUCKET is required when TESSERA_SOURCE=s3");
    const endpoint = env.TESSERA_S3_ENDPOINT || undefined;
    if (endpoint !== undefined && !URL.canParse(endpoint)) {
      throw new ConfigError(`TESSERA_S3_ENDPOINT "${endpoint}" is not a URL`);
    }
    const client = new S3Client({
      endpoint,
      region: env.TESSERA_S3_REGION || "us-east-1",
      // RGW and MinIO serve buckets by path, not by virtual host.
      forcePathStyle: endpoint !== undefined,
    });
    return new S3SourceCatalog({ client, bucket, prefix: env.TESSERA_S3_PREFIX ?? "" });
  }
  throw new ConfigError(`TESSERA_SOURCE "${kind}" must be local or s3`);
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} "${text}" must be an integer from ${min} to ${max}`);
  }
  return Number(text);
}

