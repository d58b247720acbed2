// The IIIF Presentation API 3.0 manifest of one image: one Canvas the image's size, painted with
// the image through its Image API 3.0 service, and what the publisher says of it (label, summary,
// requiredStatement, rights, metadata). Built from a source's metadata alone, like info.json, so
// answering it costs no decode. The edge decides the URLs, the limits and, for a restricted
// source, the probe and the degraded thumbnail (edge/handlers/manifest.ts); this only assembles.
import type { LanguageMap } from "../description";
import type { SourceInfo } from "../protocol";
import { resolveSize } from "./resolve";
import { seeAlso, type SizeLimits, type TileJsonLink } from "./info";
import { GEOREF_CONTEXT, georeferenceAnnotation, NAVPLACE_CONTEXT, navPlace } from "./georeference";

export const PRESENTATION_CONTEXT = "http://iiif.io/api/presentation/3/context.json";

/** A thumbnail as wide as a viewer's gallery or search result shows one, or a bit wider. */
export const THUMBNAIL_MIN_WIDTH = 300;
/** Wider than this, a stored level is no thumbnail (an image without overviews): none is offered. */
export const THUMBNAIL_MAX_WIDTH = 1200;

/** An image service the manifest points at: its id (info.json's) and its metadata. */
export interface ServiceRef {
  id: string;
  info: SourceInfo;
}

export interface ManifestParts {
  /** The manifest's own URL. */
  id: string;
  /** The image, whole: its service and metadata (the description is read from it). */
  image: ServiceRef;
  /** The limits its service declares: they decide the size `full/max` answers. */
  limits: SizeLimits;
  /** The image a thumbnail is taken from: the image itself, or for a restricted one its degraded image; absent: none. */
  thumbnailOf?: ServiceRef;
  /** The services inside the image service (a restricted image's probe), and the contexts they need before Presentation's. */
  auth?: { context: string; services: Record<string, unknown>[] };
  /** The source's map layers (a georeferenced source), linked as info.json links them. */
  tileJsons: TileJsonLink[];
}

/** The label a source without one of its publisher's goes by: its id, in no language. */
const fallbackLabel = (id: string): LanguageMap => ({ none: [id] });

const imageService = (id: string, services?: Record<string, unknown>[]) => ({
  id,
  type: "ImageService3",
  profile: "level2",
  ...(services && services.length > 0 && { service: services }),
});

/**
 * The stored level a thumbnail is: the smallest at least THUMBNAIL_MIN_WIDTH wide (the whole image
 * if smaller), so it is read from one overview and sharp in a gallery's slot; none when that
 * level is wider than THUMBNAIL_MAX_WIDTH, as for an image without overviews.
 */
export function thumbnailLevel(info: SourceInfo): { width: number; height: number } | undefined {
  const wideEnough = info.levels.filter((level) => level.width >= THUMBNAIL_MIN_WIDTH);
  const level = wideEnough.length > 0 ? wideEnough.reduce((a, b) => (b.width < a.width ? b : a)) : info.levels[0];
  return level.width <= THUMBNAIL_MAX_WIDTH ? level : undefined;
}

function thumbnail({ id, info }: ServiceRef) {
  const level = thumbnailLevel(info);
  if (!level) return undefined;
  const { width, height } = level;
  // w,h exactly: the level's own size, which `w,` could round to another height.
  return [{ id: `${id}/full/${width},${height}/0/default.jpg`, type: "Image", format: "image/jpeg", width, height, service: [imageService(id)] }];
}

export function manifest({ id, image, limits, thumbnailOf, auth, tileJsons }: ManifestParts) {
  const { info } = image;
  const description = info.description ?? {};
  const label = description.label ?? fallbackLabel(info.id);
  // `full/max` is the largest size the service delivers, which its limits may make smaller than the image.
  const full = resolveSize({ kind: "max", upscale: false }, { x: 0, y: 0, w: info.width, h: info.height }, { width: info.width, height: info.height, ...limits });
  const canvasId = `${image.id}/canvas/1`;
  const thumb = thumbnailOf && thumbnail(thumbnailOf);
  // A placed source: its georeference annotation on the canvas, as the Georeference Extension asks
  // (the same document its service's georeference.json is), and its footprint as navPlace.
  const georef = georeferenceAnnotation({ id: `${image.id}/georeference.json`, service: image.id, canvas: canvasId, manifest: id, info });
  const place = navPlace(id, info, label);
  const canvas = {
    id: canvasId,
    type: "Canvas",
    label,
    width: info.width,
    height: info.height,
    ...(thumb && { thumbnail: thumb }),
    items: [
      {
        id: `${canvasId}/page/1`,
        type: "AnnotationPage",
        items: [
          {
            id: `${canvasId}/page/1/image`,
            type: "Annotation",
            motivation: "painting",
            body: {
              id: `${image.id}/full/max/0/default.jpg`,
              type: "Image",
              format: "image/jpeg",
              width: full.width,
              height: full.height,
              service: [imageService(image.id, auth?.services)],
            },
            target: canvasId,
          },
        ],
      },
    ],
    ...(georef && { annotations: [{ id: `${canvasId}/annotations/1`, type: "AnnotationPage", items: [georef] }] }),
  };
  // The extensions' contexts first, Presentation's last, as the specifications ask of several.
  const contexts = [...(place ? [NAVPLACE_CONTEXT] : []), ...(georef ? [GEOREF_CONTEXT] : []), ...(auth ? [auth.context] : [])];
  return {
    "@context": contexts.length > 0 ? [...contexts, PRESENTATION_CONTEXT] : PRESENTATION_CONTEXT,
    id,
    type: "Manifest",
    label,
    ...(description.summary && { summary: description.summary }),
    ...(description.metadata && { metadata: description.metadata }),
    ...(description.requiredStatement && { requiredStatement: description.requiredStatement }),
    ...(description.rights && { rights: description.rights }),
    ...(thumb && { thumbnail: thumb }),
    ...(place && { navPlace: place }),
    ...seeAlso(3, tileJsons),
    items: [canvas],
  };
}
