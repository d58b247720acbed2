// The environment of the publishing commands: the store, read by the decoder's own reader of
// the same TESSERA_S3_* variables, and the edge. A command reads only the part it needs, when
// it needs it; a missing or bad variable is a ConfigError naming it (exit 2).

import { badConfig, urlVar } from "../shared/config";
import { readS3Location, type S3Location } from "../regional/source/s3-location";

export interface EdgeConfig {
  /** The edge's public address, as TESSERA_EDGE_URL gives it. */
  url: string;
  /** Bearer token of the edge's admin routes. */
  adminToken: string;
}

/** The store sources are published to. Credentials are the AWS SDK's: AWS_* variables or profiles. */
export function readStoreConfig(env: NodeJS.ProcessEnv = process.env): S3Location {
  return readS3Location(env, "(the bucket tessera publishes to, as the decoder reads it)");
}

/** The edge whose caches and pins the publishing commands manage. */
export function readEdgeConfig(env: NodeJS.ProcessEnv = process.env): EdgeConfig {
  const url = urlVar(env, "TESSERA_EDGE_URL");
  if (!url) throw badConfig("TESSERA_EDGE_URL", "is required (the edge's address, e.g. https://iiif.example.org)");
  const adminToken = env.TESSERA_ADMIN_TOKEN;
  if (!adminToken) throw badConfig("TESSERA_ADMIN_TOKEN", "is required (the token of the edge's admin routes)");
  return { url, adminToken };
}

/** The environment as `tessera --help` lists it. */
export const ENVIRONMENT_HELP = `
Environment (read only by the commands that need it):
  TESSERA_S3_BUCKET       the bucket sources are published to (required)
  TESSERA_S3_PREFIX       key prefix; source <id> is <prefix><id>.tif   ("")
                          (a bucket without versioning, as on R2: <prefix><id>.versions/<sha256>.tif)
  TESSERA_S3_REGION       region                                      (us-east-1)
  TESSERA_S3_ENDPOINT     a store other than AWS (RGW, MinIO)         (AWS)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE …  credentials (the AWS SDK's chain)
  TESSERA_EDGE_URL        the edge's address
  TESSERA_ADMIN_TOKEN     token of the edge's admin routes`;
