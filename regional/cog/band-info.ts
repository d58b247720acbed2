// A COG's bands as GDAL describes them, for the map /info route (rio-tiler's Info): each band's
// sample type, nodata value, scale, offset, colour interpretation and description, and what
// marks its pixels invalid. Read once at open from the full level's tags (GDAL_NODATA, and
// GDAL_METADATA's per-band items), so the edge answers /info from cached metadata.
import type { GeoTIFFImage } from "geotiff";
import type { BandInfo, SourceInfo } from "../../shared/protocol";
import { bandLayout, sampleType } from "./bands";

/** A GDAL_METADATA longer than this is not read (a band description is a short text). */
const MAX_METADATA_CHARS = 64 * 1024;
const MAX_DESCRIPTION = 200;
const TYPE_NAMES = { uint: "uint", int: "int", float: "float" } as const;

export interface BandsDescription {
  bands: BandInfo[];
  nodataType: NonNullable<SourceInfo["nodataType"]>;
}

/** Bands past this many are not described (a SourceInfo stays small): /info then answers without them. */
export const MAX_DESCRIBED_BANDS = 256;

export async function describeBands(image: GeoTIFFImage, hasMask: boolean): Promise<BandsDescription | undefined> {
  const layout = bandLayout(image);
  if (layout.count > MAX_DESCRIBED_BANDS) return undefined;
  const { kind, bits } = sampleType(image);
  const nodata = image.getGDALNoData();
  const items = await metadataItems(image);
  const colours = colourInterpretations(image, layout.count, layout.alpha);
  const bands = Array.from({ length: layout.count }, (_, i): BandInfo => {
    const item = (name: string) => items.get(`${name}/${i}`);
    const number = (name: string, fallback: number) => {
      const value = Number(item(name));
      return item(name) !== undefined && Number.isFinite(value) ? value : fallback;
    };
    return {
      dtype: `${TYPE_NAMES[kind]}${bits}`,
      ...(nodata !== null && { nodata: Number.isNaN(nodata) ? ("nan" as const) : nodata }),
      scale: number("SCALE", 1),
      offset: number("OFFSET", 0),
      colorinterp: colours[i],
      description: (item("DESCRIPTION") ?? "").slice(0, MAX_DESCRIPTION),
    };
  });
  // rio-tiler's order: a nodata value first, then an alpha band, then a mask.
  const nodataType = nodata !== null ? "Nodata" : layout.alpha !== undefined ? "Alpha" : hasMask ? "Mask" : "None";
  return { bands, nodataType };
}

/** GDAL_METADATA's per-band items, by `{name}/{sample}`. */
async function metadataItems(image: GeoTIFFImage): Promise<Map<string, string>> {
  const items = new Map<string, string>();
  const dir = image.getFileDirectory();
  if (!dir.hasTag("GDAL_METADATA")) return items;
  const text = String((await dir.loadValue("GDAL_METADATA")) ?? "");
  if (text.length > MAX_METADATA_CHARS) return items;
  for (const m of text.matchAll(/<Item\s+name="([^"]{1,64})"\s+sample="(\d{1,5})"[^>]*>([^<]{0,1000})<\/Item>/g)) {
    // GDAL escapes a value for XML before it writes the XML, so it reads one back unescaped twice.
    items.set(`${m[1]}/${Number(m[2])}`, unescapeXml(unescapeXml(m[3])));
  }
  return items;
}

const unescapeXml = (text: string) =>
  text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");

/** GDAL's colour interpretation of each band, lower case, as rasterio names them. */
function colourInterpretations(image: GeoTIFFImage, count: number, alpha: number | undefined): string[] {
  const photometric = image.getFileDirectory().getValue("PhotometricInterpretation") as number | undefined;
  const first = photometric === 2 || photometric === 6 ? ["red", "green", "blue"] : photometric === 3 ? ["palette"] : ["gray"];
  return Array.from({ length: count }, (_, i) => (i === alpha ? "alpha" : (first[i] ?? "undefined")));
}
