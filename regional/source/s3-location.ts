// Where the S3 store is, from the environment. The decoder reads its sources there and the
// tessera command publishes there: both read the same variables through this one module.

import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { badConfig, urlVar } from "../../shared/config";

export interface S3Location {
  bucket: string;
  /** Key prefix; source id `x` lives at `<prefix>x.tif`. */
  prefix: string;
  region: string;
  /** Endpoint of a store other than AWS (RGW, MinIO); undefined for AWS itself. */
  endpoint?: string;
}

/** The characters of bucket names (S3's, and RGW's relaxed ones); never a path such as "bucket/prefix". */
const BUCKET_NAME = /^[A-Za-z0-9._-]+$/;
const REGION_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * Reads TESSERA_S3_BUCKET, _PREFIX, _REGION and _ENDPOINT. `bucketRequired` ends the message
 * of a missing bucket: when or why the caller needs it.
 */
export function readS3Location(env: NodeJS.ProcessEnv, bucketRequired: string): S3Location {
  const bucket = env.TESSERA_S3_BUCKET;
  if (!bucket) throw badConfig("TESSERA_S3_BUCKET", `is required ${bucketRequired}`);
  if (!BUCKET_NAME.test(bucket)) {
    throw badConfig("TESSERA_S3_BUCKET", `must be a bucket name (a key prefix goes in TESSERA_S3_PREFIX), got ${JSON.stringify(bucket)}`);
  }
  const region = env.TESSERA_S3_REGION || "us-east-1";
  if (!REGION_NAME.test(region)) throw badConfig("TESSERA_S3_REGION", `must be a region name such as eu-west-1, got ${JSON.stringify(region)}`);
  return {
    bucket,
    prefix: env.TESSERA_S3_PREFIX ?? "",
    region,
    endpoint: urlVar(env, "TESSERA_S3_ENDPOINT"),
  };
}

/** A client of the store; credentials come from the SDK's default chain (AWS_* variables, profiles). */
export function s3ClientFor(location: S3Location, requestHandler?: S3ClientConfig["requestHandler"]): S3Client {
  return new S3Client({
    endpoint: location.endpoint,
    region: location.region,
    // RGW and MinIO serve buckets by path, not by virtual host.
    forcePathStyle: location.endpoint !== undefined,
    // Checksums only where an operation requires them: RGW (and older MinIO) answer the SDK's
    // default aws-chunked uploads with trailing checksums with 411.
    requestChecksumCalculation: "WHEN_REQUIRED",
    requestHandler,
  });
}

/** What the SDK puts on a failed command (no credentials in any of these fields). */
interface SdkError {
  name?: string;
  $metadata?: { httpStatusCode?: number };
}
/** The HTTP status of a failed S3 command, if it got an answer. */
export const statusOf = (e: unknown) => (e as SdkError).$metadata?.httpStatusCode;
/** The name of a failed S3 command's error (NoSuchKey, NotFound…). */
export const nameOf = (e: unknown) => (e as SdkError).name ?? "Error";
