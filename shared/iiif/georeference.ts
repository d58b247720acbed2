// Where a georeferenced image lies, for IIIF clients: its footprint as the navPlace Extension's
// GeoJSON, and a Georeference Extension annotation (ground control points, the transformation
// to fit them, the image's outline as the resource mask) that Allmaps and other clients warp it
// with. Built from what the decoder placed (Georeference's controlPoints and footprint), so the
// edge needs no proj4, and answering costs no decode. Pure: the edge decides the URLs.
import type { LanguageMap } from "../description";
import type { ControlPoint, SourceInfo } from "../protocol";

export const GEOREF_CONTEXT = "http://iiif.io/api/extension/georef/1/context.json";
export const NAVPLACE_CONTEXT = "http://iiif.io/api/extension/navplace/context.json";

/**
 * A thin plate spline through the 5×5 grid: it passes through every control point, and between
 * them @allmaps/transform stays within a metre of GDAL on a 20 km UTM image (tens of metres on
 * ~50–100 km polar stereographic and high-latitude LAEA ones; docs/api.md has the figures). A
 * cubic polynomial would fit those better, but Allmaps (1.0.0-beta.53) reads any "polynomial"
 * as order 1 whatever its `order`, which strays ~20 m on the UTM image and a kilometre on the LAEA one.
 */
export const TRANSFORMATION = { type: "thinPlateSpline" } as const;

/** The control points and footprint of a source that has them (a placed, single image); else undefined. */
export function placement(info: SourceInfo): { controlPoints: ControlPoint[]; footprint: [number, number][] } | undefined {
  const geo = info.georeference;
  if (info.mosaic || !geo?.controlPoints?.length || !geo.footprint || geo.footprint.length < 3) return undefined;
  return { controlPoints: geo.controlPoints, footprint: geo.footprint };
}

export interface GeoreferenceParts {
  /** The annotation's own URL: {service}/georeference.json. */
  id: string;
  /** The image service it georeferences (Image API 3.0). */
  service: string;
  /** The canvas the image is painted on, and the manifest holding it: the annotation's partOf. */
  canvas: string;
  manifest: string;
  info: SourceInfo;
}

/**
 * The Georeference Annotation: its target the image service (a SpecificResource whose selector,
 * the resource mask, is the whole image's outline), its body the control points as GeoJSON Point
 * features with their pixel positions in `resourceCoords`, and the transformation to fit them.
 * Undefined for a source without control points.
 */
export function georeferenceAnnotation({ id, service, canvas, manifest, info }: GeoreferenceParts) {
  const placed = placement(info);
  if (!placed) return undefined;
  const { width, height } = info;
  return {
    id,
    type: "Annotation",
    motivation: "georeferencing",
    target: {
      type: "SpecificResource",
      source: {
        id: service,
        type: "ImageService3",
        profile: "level2",
        width,
        height,
        partOf: [{ id: canvas, type: "Canvas", partOf: [{ id: manifest, type: "Manifest" }] }],
      },
      selector: { type: "SvgSelector", value: `<svg width="${width}" height="${height}"><polygon points="0,0 ${width},0 ${width},${height} 0,${height}" /></svg>` },
    },
    body: {
      type: "FeatureCollection",
      transformation: TRANSFORMATION,
      features: placed.controlPoints.map(({ resource, geo }) => ({
        type: "Feature",
        properties: { resourceCoords: resource },
        geometry: { type: "Point", coordinates: geo },
      })),
    },
  };
}

/**
 * The navPlace value: one Feature, the image's footprint as a GeoJSON Polygon (its ring closed and
 * counter-clockwise, as RFC 7946 asks of an exterior ring), labelled as the manifest is.
 * Undefined for a source without a footprint.
 */
export function navPlace(manifestId: string, info: SourceInfo, label: LanguageMap) {
  const placed = placement(info);
  if (!placed) return undefined;
  const ring = counterClockwise(placed.footprint);
  return {
    id: `${manifestId}/feature-collection/1`,
    type: "FeatureCollection",
    features: [
      {
        id: `${manifestId}/feature/1`,
        type: "Feature",
        properties: { label },
        geometry: { type: "Polygon", coordinates: [[...ring, ring[0]]] },
      },
    ],
  };
}

/** The ring as given, or reversed when its signed area (shoelace, lon as x) says it turns clockwise. */
function counterClockwise(ring: [number, number][]): [number, number][] {
  let twiceArea = 0;
  ring.forEach(([x0, y0], i) => {
    const [x1, y1] = ring[(i + 1) % ring.length];
    twiceArea += x0 * y1 - x1 * y0;
  });
  return twiceArea >= 0 ? ring : [...ring].reverse();
}
