// The IIIF Presentation 3.0 documents the project's builders make, in every variant a server
// answers: the manifest of a plain, a described, a georeferenced, a restricted (each access
// profile, with its probe and degraded thumbnail) and a snapshot source, and the collection's
// pages (the first, one with a next page, a later one with partOf, the last). For tests that
// check what the documents are, not how the edge routes to them.
import type { Restriction } from "../../shared/access";
import type { Description } from "../../shared/description";
import { collection, type CollectionParts } from "../../shared/iiif/collection";
import { manifest, type ManifestParts } from "../../shared/iiif/manifest";
import type { ControlPoint, Georeference, SourceInfo } from "../../shared/protocol";
import type { AccessConfig } from "../../edge/access/config";
import { AUTH_CONTEXT, probeService } from "../../edge/access/services";

export const BASE = "https://tiles.example.org";
const service = (path: string) => `${BASE}/iiif/3/${path}`;

export function source(id: string, sizes: [number, number][], extra: Partial<SourceInfo> = {}): SourceInfo {
  const [[width, height]] = sizes;
  return { id, version: "v1", width, height, tileWidth: 256, tileHeight: 256, levels: sizes.map(([w, h]) => ({ width: w, height: h })), bytes: 1, ...extra };
}

/** A description with every field, in two languages, one of them a regional tag. */
export const FULL: Description = {
  label: { en: ["Map of Graz, 1850"], "de-AT": ["Stadtplan von Graz, 1850"] },
  summary: { en: ["A city plan, hand coloured."] },
  requiredStatement: { label: { en: ["Attribution"] }, value: { en: ["Graz City Archive"] } },
  rights: "http://creativecommons.org/licenses/by/4.0/",
  metadata: [
    { label: { en: ["Date"] }, value: { none: ["1850"] } },
    { label: { en: ["Scale"] }, value: { en: ["1:5000"] } },
  ],
};

/** A placed source's georeference as the decoder gives it: a 5×5 grid of control points and an outline. */
function georeference(width: number, height: number): Georeference {
  const controlPoints: ControlPoint[] = [];
  for (let j = 0; j < 5; j++) for (let i = 0; i < 5; i++) controlPoints.push({ resource: [(i * width) / 4, (j * height) / 4], geo: [15.4 + i * 0.01, 47.1 - j * 0.01] });
  const footprint: [number, number][] = [[15.4, 47.1], [15.44, 47.1], [15.44, 47.06], [15.4, 47.06]];
  return { crs: "EPSG:4326", bbox: [15.4, 47.06, 15.44, 47.1], lonLatBounds: [15.4, 47.06, 15.44, 47.1], tiling: {}, controlPoints, footprint } as Georeference;
}

const ACCESS = { institution: "Graz City Archive" } as AccessConfig;

const plainParts = (info: SourceInfo, path = info.id): ManifestParts => ({
  id: `${service(path)}/manifest.json`,
  image: { id: service(path), info },
  limits: {},
  thumbnailOf: { id: service(path), info },
  tileJsons: [],
});

function restricted(profile: Restriction["profile"]): ManifestParts {
  const restriction: Restriction = { profile, degradedWidth: 400 };
  const info = source("secret", [[1000, 1000], [500, 500], [250, 250]], { description: FULL });
  return {
    ...plainParts(info),
    limits: { maxWidth: 400 },
    thumbnailOf: { id: service("secret~degraded"), info: source("secret", [[400, 400], [250, 250]]) },
    auth: { context: AUTH_CONTEXT, services: [probeService(service("secret"), BASE, restriction, ACCESS)] },
  };
}

/** Each variant's builder parts, by name. */
export const MANIFEST_PARTS: Record<string, ManifestParts> = {
  plain: plainParts(source("plain", [[1000, 800], [500, 400], [250, 200]])),
  "plain, too large for a thumbnail": plainParts(source("huge", [[20000, 15000]])),
  described: plainParts(source("graz", [[4000, 3000], [2000, 1500], [1000, 750], [500, 375], [250, 188]], { description: FULL })),
  georeferenced: {
    ...plainParts(source("geo", [[1024, 1024], [512, 512], [256, 256]], { description: FULL, georeference: georeference(1024, 1024) })),
    tileJsons: [
      { tileMatrixSet: "WebMercatorQuad", url: `${BASE}/tiles/geo@v1/WebMercatorQuad/tilejson.json` },
      { tileMatrixSet: "WorldCRS84Quad", url: `${BASE}/tiles/geo@v1/WorldCRS84Quad/tilejson.json` },
    ],
  },
  "restricted, active": restricted("active"),
  "restricted, kiosk": restricted("kiosk"),
  "restricted, external": restricted("external"),
  snapshot: plainParts(source("plain", [[1000, 800], [500, 400]]), "plain@v1"),
};

export const MANIFESTS = Object.fromEntries(Object.entries(MANIFEST_PARTS).map(([name, parts]) => [name, manifest(parts)]));

const collectionParts = (over: Partial<CollectionParts>): CollectionParts => ({
  collectionId: `${BASE}/iiif/3/collection.json`,
  listing: { sources: [{ id: "graz", label: FULL.label }, { id: "plain" }], next: "plain" },
  manifestId: (id) => `${BASE}/iiif/3/${id}/manifest.json`,
  pageAfter: (after) => `${BASE}/iiif/3/collection.json?page=${encodeURIComponent(after)}`,
  ...over,
});

/** Each collection page's builder parts, by name. */
export const COLLECTION_PARTS: Record<string, CollectionParts> = {
  "the first page, the only one": collectionParts({ listing: { sources: [{ id: "graz", label: FULL.label }] } }),
  "the first page, with a next page": collectionParts({}),
  "a later page, with a next page": collectionParts({ after: "graz" }),
  "the last page": collectionParts({ after: "plain", listing: { sources: [{ id: "zeta" }] } }),
  "an empty page": collectionParts({ after: "zeta", listing: { sources: [] } }),
};

export const COLLECTIONS = Object.fromEntries(Object.entries(COLLECTION_PARTS).map(([name, parts]) => [name, collection(parts)]));
