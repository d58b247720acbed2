// `npm start`: the whole stack on this machine, on the embedded default (local files),
// or on a local versioned S3 (Ceph RGW) with TESSERA_SOURCE=s3. Ctrl-C stops everything.
import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { ROOT } from "../root";
import { startStack } from "./stack";
import { startViewerServer } from "./viewer-server";

const port = Number(process.env.TESSERA_PORT ?? 8787);
const source = process.env.TESSERA_SOURCE ?? "local";
const cleanups: (() => Promise<void>)[] = [];

async function s3DecoderEnv(): Promise<Record<string, string>> {
  const { startLocalS3, makeS3Client, ensureVersionedBucket, s3DecoderEnv } = await import("./s3");
  const { PutObjectCommand } = await import("@aws-sdk/client-s3");
  const { readFile } = await import("node:fs/promises");
  const s3 = await startLocalS3();
  cleanups.push(() => s3.stop());
  const bucket = process.env.TESSERA_S3_BUCKET ?? "tessera";
  const client = makeS3Client(s3);
  await ensureVersionedBucket(client, bucket);
  const dir = process.env.TESSERA_DATA_DIR ?? `${ROOT}samples`;
  for (const name of (await readdir(dir)).filter((n) => n.endsWith(".tif"))) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: name, Body: await readFile(`${dir}/${name}`) }));
  }
  console.log(`local S3 at ${s3.endpoint}, bucket "${bucket}" holds the .tif files of ${dir}`);
  return s3DecoderEnv(s3, bucket);
}

async function main() {
  const decoderEnv = source === "s3" ? await s3DecoderEnv() : {};
  // The publisher's admin token: yours if set, else a fresh one for this run.
  const adminToken = process.env.TESSERA_ADMIN_TOKEN || randomBytes(16).toString("hex");
  const stack = await startStack({
    vars: { ADMIN_TOKEN: adminToken },
    port,
    decoderPort: Number(process.env.TESSERA_DECODER_PORT ?? 9100),
    decoders: Number(process.env.TESSERA_DECODERS ?? 1),
    decoderEnv,
    verbose: true,
  });
  cleanups.unshift(() => stack.stop());
  const viewer = await startViewerServer({
    port: Number(process.env.TESSERA_VIEWER_PORT ?? 8788),
    edgeUrl: stack.url,
  });
  cleanups.unshift(() => viewer.close());
  console.log(`
Tessera is running (${source} sources).
  Open the viewer: ${viewer.url}?id=test-pattern
  or the map:      ${viewer.url}map.html?id=utm-quadrants
  terrain in 3D:   ${viewer.url}map.html?id=jacksboro-dem&terrain=1.5&rescale=230,1080&colormap_name=greys
  a whole image:   ${stack.url}/iiif/3/test-pattern/full/max/0/default.jpg
  info.json:       ${stack.url}/iiif/3/test-pattern/info.json
  TileJSON:        ${stack.url}/tiles/utm-quadrants/WebMercatorQuad/tilejson.json
  metrics:         ${stack.url}/metrics
  admin token:     TESSERA_EDGE_URL=${stack.url} TESSERA_ADMIN_TOKEN=${adminToken}
                   (curl -X POST -H "Authorization: Bearer $TESSERA_ADMIN_TOKEN" $TESSERA_EDGE_URL/admin/sources/test-pattern/invalidate)
Ctrl-C stops it.`);
}

let stopping = false;
async function stop(code: number) {
  if (stopping) return;
  stopping = true;
  for (const cleanup of cleanups) await cleanup().catch((e) => console.error(e));
  process.exit(code);
}
process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));
main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  return stop(1);
});
