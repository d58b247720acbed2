// What the publishing commands share: the store from the environment, the edge's admin route,
// and the store's refusals (unknown id or version) as the command's.
import { GetBucketVersioningCommand, type S3Client } from "@aws-sdk/client-s3";
import { HttpError } from "../shared/errors";
import { s3ClientFor, statusOf } from "../regional/source/s3-location";
import { Refusal } from "./refusal";
import { SourceStore, type VersionLayout } from "./source-store";
import { readEdgeConfig, readStoreConfig } from "./store-config";

/** The store of the environment, keeping versions as its bucket can (asked once per command). */
export async function openStore(): Promise<SourceStore> {
  const location = readStoreConfig();
  const client = s3ClientFor(location);
  return new SourceStore(client, location.bucket, location.prefix, await versionLayoutOf(client, location.bucket));
}

/**
 * "versioned" when the bucket's versioning is Enabled; otherwise (never enabled, Suspended, or a
 * store with no such call, which answers 501 NotImplemented) content-addressed versions.
 */
export async function versionLayoutOf(client: S3Client, bucket: string): Promise<VersionLayout> {
  try {
    const { Status } = await client.send(new GetBucketVersioningCommand({ Bucket: bucket }));
    return Status === "Enabled" ? "versioned" : "content";
  } catch (e) {
    if (statusOf(e) === 501) return "content";
    throw e;
  }
}

/** The edge's answer to an invalidation: live decoders, those that confirmed, snapshots dropped. */
export interface Invalidated {
  id: string;
  /** The mosaic member invalidated, when one was named. */
  member?: string;
  decoders: number;
  invalidated: number;
  dropped: number;
}

/**
 * Makes the edge serve `id`'s current (pinned) version now: POST /admin/sources/{id}/invalidate;
 * with `member`, only that asset of the mosaic `id` is opened afresh (`?member=`).
 */
export async function invalidateAtEdge(id: string, member?: string): Promise<Invalidated> {
  const edge = readEdgeConfig();
  const query = member === undefined ? "" : `?member=${encodeURIComponent(member)}`;
  const res = await fetch(`${edge.url.replace(/\/$/, "")}/admin/sources/${encodeURIComponent(id)}/invalidate${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${edge.adminToken}` },
  });
  const body = (await res.json().catch(() => ({}))) as Partial<Invalidated> & { message?: string };
  if (res.status === 401) throw new Refusal(`the edge refused TESSERA_ADMIN_TOKEN: ${body.message ?? "401"}`);
  if (!res.ok) throw new Error(`the edge answered ${res.status} to the invalidation: ${body.message ?? ""}`);
  return body as Invalidated;
}

/** Runs a store operation; its "unknown id or version" answers are the command's refusals. */
export async function refusing<T>(operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (e) {
    if (e instanceof HttpError && e.status >= 400 && e.status < 500) throw new Refusal(e.message);
    throw e;
  }
}
