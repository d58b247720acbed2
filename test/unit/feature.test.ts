// GeoJSON bodies of the POST map routes (shared/maps/feature.ts): one canonical text and digest
// for every spelling of the same features, and every hostile body a clear 400 or 413, refused
// before it costs anything (a million-vertex polygon in well under a frame).
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { featuresOf, MAX_FEATURE_BODY_BYTES, MAX_FEATURE_VERTICES, parseFeatureBody } from "../../shared/maps/feature";

const square = [[[15.0, 47.7], [15.1, 47.7], [15.1, 47.8], [15.0, 47.8], [15.0, 47.7]]];
const feature = { type: "Feature", properties: { name: "field 7", tags: { crop: "maize", year: 2026 } }, geometry: { type: "Polygon", coordinates: square } };

async function refusal(body: string): Promise<HttpError> {
  const err = await parseFeatureBody(body).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(HttpError);
  return err as HttpError;
}

describe("canonical GeoJSON bodies", () => {
  it("the same features in any key order and spacing have one text and one SHA-256", async () => {
    const a = await parseFeatureBody(JSON.stringify(feature));
    const reordered = `{ "geometry": {"coordinates": ${JSON.stringify(square)}, "type": "Polygon"},
      "properties": {"tags": {"year": 2026, "crop": "maize"}, "name": "field 7"}, "type": "Feature" }`;
    const b = await parseFeatureBody(reordered);
    expect(b.canonical).toBe(a.canonical);
    expect(b.digest).toBe(a.digest);
    expect(a.digest).toBe(createHash("sha256").update(a.canonical, "utf8").digest("hex"));
    expect(JSON.parse(a.canonical)).toEqual(feature);
  });

  it("different properties are a different body (they are echoed back)", async () => {
    const other = await parseFeatureBody(JSON.stringify({ ...feature, properties: { name: "field 8" } }));
    expect(other.digest).not.toBe((await parseFeatureBody(JSON.stringify(feature))).digest);
  });

  it("a FeatureCollection of a Polygon and a MultiPolygon, and a self-intersecting ring, are taken", async () => {
    const bowTie = [[[15, 47], [15.1, 47.1], [15.1, 47], [15, 47.1], [15, 47]]];
    const body = { type: "FeatureCollection", features: [feature, { type: "Feature", properties: null, geometry: { type: "MultiPolygon", coordinates: [square, bowTie] } }] };
    const parsed = await parseFeatureBody(JSON.stringify(body));
    expect(parsed.kind).toBe("FeatureCollection");
    expect(parsed.features).toHaveLength(2);
    expect(parsed.vertices).toBe(15);
  });
});

describe("hostile bodies", () => {
  const polygon = (coordinates: unknown) => JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates } });
  const cases: [string, string, number, RegExp][] = [
    ["invalid JSON", "{\"type\": \"Feature\",", 400, /not JSON/],
    ["NaN in coordinates (not JSON)", polygon([[[15, 47], [15.1, 47]]]).replace("15.1", "NaN"), 400, /not JSON/],
    ["an infinite coordinate (1e999)", polygon([[[15, 47], [15.1, 47], [15.1, 47.1], [15, 47]]]).replace("15.1,47]", "1e999,47]"), 400, /finite/],
    ["a Point", JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Point", coordinates: [15, 47] } }), 400, /Polygon or MultiPolygon, not "Point"/],
    ["a bare geometry", JSON.stringify({ type: "Polygon", coordinates: square }), 400, /Feature or FeatureCollection/],
    ["an unclosed ring", polygon([[[15, 47], [15.1, 47], [15.1, 47.1], [15, 47.1]]]), 400, /not closed/],
    ["a ring of three positions", polygon([[[15, 47], [15.1, 47], [15, 47]]]), 400, /at least 4/],
    ["a latitude past 90", polygon([[[15, 47], [15.1, 91], [15.1, 47.1], [15, 47]]]), 400, /latitude 91/],
    ["a longitude past 180", polygon([[[15, 47], [181, 47], [15.1, 47.1], [15, 47]]]), 400, /longitude 181/],
    ["a position of text", polygon([[[15, 47], ["15", 47], [15.1, 47.1], [15, 47]]]), 400, /finite numbers/],
    ["an empty collection", JSON.stringify({ type: "FeatureCollection", features: [] }), 400, /empty/],
    ["too many features", JSON.stringify({ type: "FeatureCollection", features: Array(300).fill(feature) }), 400, /more than 256/],
    ["properties nested 100 deep", JSON.stringify({ ...feature, properties: { a: JSON.parse("[".repeat(100) + "]".repeat(100)) } }), 400, /deeper/],
    ["a 2 MiB body", JSON.stringify({ ...feature, properties: { pad: "x".repeat(2 * 1024 * 1024) } }), 413, new RegExp(`more than ${MAX_FEATURE_BODY_BYTES}`)],
  ];
  for (const [what, body, status, message] of cases) {
    it(`${what}: ${status}`, async () => {
      const err = await refusal(body);
      expect(err.status).toBe(status);
      expect(err.message).toMatch(message);
    });
  }

  it("more vertices than the cap: 400, and a million-vertex polygon is refused before its positions are read", () => {
    const ring = Array.from({ length: 1_000_000 }, (_, i) => [15 + (i % 1000) / 1e4, 47 + Math.floor(i / 1000) / 1e4]);
    ring.push(ring[0]);
    const started = performance.now();
    expect(() => featuresOf({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } })).toThrow(`more than ${MAX_FEATURE_VERTICES} vertices`);
    expect(performance.now() - started).toBeLessThan(20);
    const text = JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } });
    return refusal(text).then((err) => expect(err.status).toBe(413)); // as a body it is past the size first
  });

  it("the vertex cap counts every feature together", () => {
    const ring = Array.from({ length: 30_000 }, (_, i) => [15 + i / 1e6, 47 + (i % 2) / 1e3]);
    ring.push(ring[0]);
    const big = { type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } };
    expect(() => featuresOf({ type: "FeatureCollection", features: [big] })).not.toThrow();
    expect(() => featuresOf({ type: "FeatureCollection", features: [big, big] })).toThrow(/vertices/);
  });
});
