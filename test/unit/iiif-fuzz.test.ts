// Property-based tests of the IIIF grammar, canonical forms and resolution, for 3.0 and 2.1:
// requests, valid and broken, against images of any size with or without size limits.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { segment } from "../../shared/path-segment";
import { HttpError } from "../../shared/errors";
import { FORMATS, parseImageRequest, QUALITIES, type ApiVersion, type ImageRequestParts } from "../../shared/iiif/image-request";
import {
  canonicalParts,
  pixelParts,
  resolveImageRequest,
  type ImageLimits,
  type ResolvedImageRequest,
} from "../../shared/iiif/resolve";

// A few seconds per run; FUZZ_RUNS=100000 searches harder.
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);

const int = (max: number) => fc.integer({ min: 0, max }).map(String);
/** Decimals as clients write them: "12", "0.5", ".5", "3.", long fractions, tiny values. */
const decimal = fc.oneof(
  int(400),
  fc.tuple(fc.double({ min: 0, max: 400, noNaN: true }), fc.integer({ min: 0, max: 12 })).map(([n, digits]) => n.toFixed(digits)),
  fc.integer({ min: 1, max: 99 }).map((n) => `0.${"0".repeat(n % 20)}${n}`),
  fc.constantFrom(".5", "3.", "0.0000001", "360", "359.9999999999999999", "1".repeat(30)),
);
const list = (item: fc.Arbitrary<string>, n: number) => fc.array(item, { minLength: n, maxLength: n }).map((a) => a.join(","));
/** Characters and pieces of the grammar, shuffled into strings that are mostly not IIIF. */
const junk = fc
  .array(
    fc.constantFrom("0", "1", "9", ",", ".", ":", "!", "^", "-", "+", "e", "pct:", "max", "full", "square", " ", "%", "\\", "x", "00"),
    { maxLength: 8 },
  )
  .map((a) => a.join(""));
/** Mostly `valid`, sometimes junk: one broken segment per request is the common case. */
const mostlyValid = (...valid: fc.Arbitrary<string>[]) =>
  fc.oneof(...valid.map((arbitrary) => ({ arbitrary, weight: 6 })), { arbitrary: junk, weight: 1 });

const region = mostlyValid(
  fc.constantFrom("full", "square"),
  list(int(2000), 4),
  list(decimal, 4).map((t) => `pct:${t}`),
);
const size = mostlyValid(
  fc.constantFrom("max", "^max", "full"),
  fc.tuple(fc.constantFrom("", "^"), fc.constantFrom("w,", ",h", "w,h", "!w,h"), int(3000), int(3000)).map(
    ([up, form, w, h]) => up + form.replace("w", w).replace("h", h),
  ),
  fc.tuple(fc.constantFrom("", "^"), fc.constantFrom("100000000", "65501", "16384")).map(([p, w]) => `${p}${w},`),
  fc.tuple(fc.constantFrom("", "^"), decimal).map(([p, n]) => `${p}pct:${n}`),
);
const rotation = mostlyValid(fc.tuple(fc.constantFrom("", "!"), decimal).map(([m, d]) => m + d));
const qualityFormat = mostlyValid(
  fc.tuple(fc.constantFrom(...QUALITIES), fc.constantFrom(...FORMATS)).map(([q, f]) => `${q}.${f}`),
);
const version = fc.constantFrom<ApiVersion>(2, 3);
const limit = fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined });
/** Mostly small images, some beyond what any encoder writes at full size. */
const side = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 3000 }), weight: 4 }, fc.integer({ min: 1, max: 200_000 }));
const image: fc.Arbitrary<ImageLimits> = fc.record({
  width: side,
  height: side,
  maxWidth: limit,
  maxHeight: limit,
  maxArea: fc.option(fc.integer({ min: 1, max: 4_000_000 }), { nil: undefined }),
});
const request = fc.record({ region, size, rotation, qualityFormat });

/** What fuzzing found, kept as regression cases: [request, version, image]. */
const FOUND: [ImageRequestParts, ApiVersion, ImageLimits][] = [
  // A tiny rotation was canonicalized as "1e-7", which the grammar refuses.
  [{ region: "full", size: "max", rotation: "0.0000001", qualityFormat: "default.jpg" }, 3, { width: 10, height: 10 }],
  // ^max made a 33x65503 image, within jpg's 65,500 only once rotated by 1°: its canonical
  // "^33,65503" was refused by the grammar.
  [
    { region: "full", size: "^max", rotation: "1", qualityFormat: "default.jpg" },
    3,
    { width: 1, height: 1927, maxArea: 2226457 },
  ],
];

/** Runs `fn`; any failure but the project's 400 fails the property. */
function orBadRequest<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch (e) {
    if (!(e instanceof HttpError) || e.status !== 400) throw e;
    expect(e.message.length).toBeGreaterThan(5);
    return undefined;
  }
}

/** Parses `region/size/rotation/quality.format` as a server would receive it. */
function parsePath(path: string, v: ApiVersion) {
  const [region, size, rotation, qualityFormat, ...rest] = path.split("/");
  expect(rest).toEqual([]);
  return parseImageRequest({ region, size, rotation, qualityFormat }, v);
}

/** The decoder's view: the pixel form against the image alone (it does not know the limits). */
function decoderResolve(pixels: string, img: ImageLimits): ResolvedImageRequest {
  return resolveImageRequest(parsePath(pixels, 3), { width: img.width, height: img.height });
}

describe("IIIF grammar under fuzzing", () => {
  it("parsing and resolving throw nothing but 400", () => {
    fc.assert(
      fc.property(request, version, image, (parts, v, img) => {
        const parsed = orBadRequest(() => parseImageRequest(parts, v));
        if (parsed) orBadRequest(() => resolveImageRequest(parsed, img));
      }),
      { numRuns: RUNS },
    );
  });

  it("any URL path after the identifier, split and decoded as the edge does, is answered or 400", () => {
    const piece = fc.oneof(
      fc.constantFrom("full", "max", "^", "%5E", "%21", "!", "/", "\\", "%2F", "%", "%E0%A4", "pct:", ",", ".", "default.jpg"),
      fc.string({ maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), version, image, (pieces, v, img) => {
        // The URL parser reads "\\" as "/"; a path with other than four segments is the route's 400.
        const segments = pieces.join("").replaceAll("\\", "/").split("/");
        if (segments.length !== 4) return;
        const [region, size, rotation, qualityFormat] = segments;
        orBadRequest(() => {
          const parts = {
            region: segment(region, "region"),
            size: segment(size, "size"),
            rotation: segment(rotation, "rotation"),
            qualityFormat: segment(qualityFormat, "quality.format"),
          };
          return resolveImageRequest(parseImageRequest(parts, v), img);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it("parse → canonical → parse is a fixed point naming the same pixels, and the decoder renders exactly them", () => {
    fc.assert(
      fc.property(request, version, image, (parts, v, img) => {
        const parsed = orBadRequest(() => parseImageRequest(parts, v));
        const resolved = parsed && orBadRequest(() => resolveImageRequest(parsed, img));
        if (!resolved) return;
        const canonical = canonicalParts(resolved, img, v);
        const again = resolveImageRequest(parsePath(canonical, v), img);
        expect(again).toEqual(resolved);
        expect(canonicalParts(again, img, v)).toBe(canonical);

        const pixels = pixelParts(resolved, img);
        const decoded = decoderResolve(pixels, img);
        expect(decoded).toEqual(resolved);
        expect(pixels.split("/")[1].replace("^", "")).toBe(`${decoded.width},${decoded.height}`);
      }),
      { numRuns: RUNS, examples: FOUND },
    );
  });
});
