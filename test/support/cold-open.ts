// The first view of a source nobody has opened yet, as the store sees it: a decoder over the S3
// catalog, its store client pointed at a fake remote region (remote-region.ts), asked for
// info.json then a tile, or for a tile first, of a source id put just before. Shared by the e2e
// test that bounds the round trips and by `npm run bench:cold`.
import type { AddressInfo } from "node:net";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { makeS3Client, type LocalS3Config } from "../../infra/local/s3";
import { createDecoderServer } from "../../regional/http/server";
import { S3SourceCatalog } from "../../regional/source/s3";
import { catalogKey, type CatalogEntry } from "../../shared/catalog";
import { DECODER, signedHeaders, VERSION_HEADER } from "../../shared/protocol";
import { sequentialRoundTrips, startRemoteRegion, type RemoteRegion, type StoreRequest } from "./remote-region";

/** One request to the decoder: its answer, and what it cost at the store. */
export interface ColdStep {
  status: number;
  body: Buffer;
  /** The snapshot the answer came from. */
  version?: string;
  /** The longest chain of store requests, each sent after the one before had answered. */
  roundTrips: number;
  /** Every store request the step waited for. */
  requests: StoreRequest[];
  ms: number;
}

export interface ColdDecoder {
  region: RemoteRegion;
  /** Puts `body` as `{id}.tif`; returns its VersionId. */
  put(id: string, body: Uint8Array): Promise<string>;
  /** Puts `document` as `{id}.mosaic.json`. */
  putMosaic(id: string, document: object): Promise<void>;
  /** Stores `{id}`'s catalog entry. */
  putEntry(id: string, entry: CatalogEntry): Promise<void>;
  /** GET a decoder path (signed as the edge signs it) and what the store saw meanwhile. */
  step(path: string): Promise<ColdStep>;
  close(): Promise<void>;
}

const SECRET = "cold-open-secret";
const PREFIX = "cold/";

/** The decoder's image path of the top-left `side`² tile of the full resolution. */
const firstTilePath = (id: string, side: number, version?: string) =>
  `/v1/image/${encodeURIComponent(id)}/0,0,${side},${side}/${side},${side}/0/default.jpg` +
  (version === undefined ? "" : `?version=${encodeURIComponent(version)}`);

/** A decoder reading `bucket` (created and versioned by the caller) through a remote region of `delayMs`. */
export async function startColdDecoder(s3: LocalS3Config, bucket: string, delayMs: number): Promise<ColdDecoder> {
  const region = await startRemoteRegion(s3.endpoint, delayMs);
  const direct: S3Client = makeS3Client(s3);
  const remote = makeS3Client({ ...s3, endpoint: region.endpoint });
  const server = createDecoderServer({
    catalog: new S3SourceCatalog({ client: remote, bucket, prefix: PREFIX }),
    secret: SECRET,
    capacity: 4,
    log: () => {},
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    region,
    put: async (id, body) => (await direct.send(new PutObjectCommand({ Bucket: bucket, Key: `${PREFIX}${id}.tif`, Body: body }))).VersionId!,
    putMosaic: async (id, document) => {
      await direct.send(new PutObjectCommand({ Bucket: bucket, Key: `${PREFIX}${id}.mosaic.json`, Body: JSON.stringify(document) }));
    },
    putEntry: async (id, entry) => {
      await direct.send(new PutObjectCommand({ Bucket: bucket, Key: catalogKey(PREFIX, id), Body: JSON.stringify(entry) }));
    },
    step: async (path) => {
      const start = performance.now();
      const res = await fetch(url + path, { headers: await signedHeaders(SECRET, "GET", path) });
      const body = Buffer.from(await res.arrayBuffer());
      const end = performance.now();
      // What ended after the answer (a background prefetch) was not waited for.
      const requests = region.requests.filter((r) => r.start >= start && r.end <= end);
      return {
        status: res.status,
        roundTrips: sequentialRoundTrips(requests),
        requests,
        ms: end - start,
        body,
        version: res.headers.get(VERSION_HEADER) ?? undefined,
      };
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      remote.destroy();
      direct.destroy();
      await region.close();
    },
  };
}

/** info.json of an unopened source, then its first tile at the version info.json named (as the edge asks). */
export async function infoThenTile(d: ColdDecoder, id: string, side: number): Promise<{ info: ColdStep; tile: ColdStep }> {
  const info = await d.step(DECODER.info(id));
  const tile = await d.step(firstTilePath(id, side, info.version));
  return { info, tile };
}

/** A tile of an unopened source, asked before anything else. */
export const tileFirst = (d: ColdDecoder, id: string, side: number): Promise<ColdStep> => d.step(firstTilePath(id, side));
