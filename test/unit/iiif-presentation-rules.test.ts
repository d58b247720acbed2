// Issue 26: what the official IIIF Presentation validator (IIIF/presentation-validator) checks of
// a 3.0 document, restated here as a checker of our own and run over every document the builders
// make. That validator picks the version from the last @context, validates the document against
// its JSON Schema for 3.0 with a Draft 7 validator (no format checker: "format": "uri" is not
// enforced, only the "^http" patterns are), passes when the schema reports nothing, and for a
// fetched document also asks that its id be the URL it came from. Nothing of it is copied or run
// here (CI has no network, and its code is not ours): each rule below is written from reading it,
// named, and made to fail at least once on a mutated good document, so no check is vacuous.
// Where a rule is the specification's rather than the schema's (stricter), it says "spec".
import { describe, expect, it } from "vitest";
import { readDescription } from "../../shared/description";
import { manifest } from "../../shared/iiif/manifest";
import { COLLECTION_PARTS, COLLECTIONS, MANIFEST_PARTS, MANIFESTS, source } from "../support/iiif-documents";

type Json = any;
const PRESENTATION_3 = "http://iiif.io/api/presentation/3/context.json";

/** What the checker found wrong, each as "path: rule". */
class Problems {
  readonly list: string[] = [];
  fail(path: string, rule: string) {
    this.list.push(`${path}: ${rule}`);
  }
  /** Fails with `rule` unless `ok`; says whether it held. */
  need(ok: boolean, path: string, rule: string) {
    if (!ok) this.fail(path, rule);
    return ok;
  }
}

const isObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

// ---- value types ----

/** An id: a string matching ^http (the schema); and an absolute http(s) URL without spaces (spec, as format uri would ask). */
function id(p: Problems, path: string, v: unknown) {
  if (!p.need(typeof v === "string" && /^http/.test(v), path, "id must be a string starting with http")) return;
  let ok = false;
  try {
    const url = new URL(v as string);
    ok = (url.protocol === "http:" || url.protocol === "https:") && !/\s/.test(v as string);
  } catch {}
  p.need(ok, path, "id must be an absolute http(s) URI (spec)");
}

/**
 * A language map: an object whose keys are letters and hyphens (or "none") and whose values are
 * lists of strings. Stricter than BCP 47, which allows digits ("es-419"): the schema's pattern.
 */
function languageMap(p: Problems, path: string, v: unknown) {
  if (!p.need(isObject(v), path, "a language map must be an object")) return;
  for (const [key, values] of Object.entries(v as object)) {
    p.need(/^[a-zA-Z-]+$/.test(key), `${path}.${key}`, "a language map's keys must be letters and hyphens, or none");
    p.need(Array.isArray(values) && values.every((s) => typeof s === "string"), `${path}.${key}`, "a language map's values must be lists of strings");
  }
}

/** A label and value pair (requiredStatement, a metadata entry): both present, both language maps. */
function labelValue(p: Problems, path: string, v: unknown) {
  if (!p.need(isObject(v), path, "a label and value pair must be an object")) return;
  for (const key of ["label", "value"] as const) if (p.need(key in (v as object), `${path}.${key}`, `a label and value pair must have ${key}`)) languageMap(p, `${path}.${key}`, (v as Json)[key]);
}

/** A width or height: an integer above 0. */
function dimension(p: Problems, path: string, v: unknown) {
  p.need(Number.isInteger(v) && (v as number) > 0, path, "a dimension must be an integer above 0");
}

/** A media type: lowercase letters, a slash, then anything. */
function format(p: Problems, path: string, v: unknown) {
  p.need(typeof v === "string" && /^[a-z]+\/.*$/.test(v), path, "format must be a media type such as image/jpeg");
}

/** rights: a Creative Commons licence or public domain URI, or a RightsStatements.org one, in their http form. */
function rights(p: Problems, path: string, v: unknown) {
  const forms = [/^http:\/\/creativecommons\.org\/licenses\//, /^http:\/\/creativecommons\.org\/publicdomain\//, /^http:\/\/rightsstatements\.org\/vocab\//];
  p.need(typeof v === "string" && forms.filter((f) => f.test(v)).length === 1, path, "rights must be an http Creative Commons or RightsStatements.org URI");
}

/** What every class has: an id, a type string, and if labelled a language map label. */
function classBasics(p: Problems, path: string, v: Json, type?: string) {
  id(p, `${path}.id`, v.id);
  if (type === undefined) p.need(typeof v.type === "string", `${path}.type`, "type must be a string");
  else p.need(v.type === type, `${path}.type`, `type must be ${type}`);
  if ("label" in v) languageMap(p, `${path}.label`, v.label);
}

function list(p: Problems, path: string, v: unknown, each: (p: Problems, path: string, item: Json) => void) {
  if (p.need(Array.isArray(v), path, "must be a list")) (v as Json[]).forEach((item, i) => each(p, `${path}[${i}]`, item));
}

function objectOf(p: Problems, path: string, v: unknown) {
  return p.need(isObject(v), path, "must be an object");
}

// ---- resources ----

/** A service list: each a 3.0 service (id, type, its profile a string, its own services) or a 2.x one (@id, @type). */
function services(p: Problems, path: string, v: unknown) {
  list(p, path, v, (p, at, s) => {
    if (!objectOf(p, at, s)) return;
    if ("@id" in s || "@type" in s) {
      id(p, `${at}.@id`, s["@id"]);
      p.need(typeof s["@type"] === "string", `${at}.@type`, "a 2.x service must have an @type");
    } else classBasics(p, at, s);
    if ("profile" in s) p.need(typeof s.profile === "string", `${at}.profile`, "a service's profile must be a string");
    if ("service" in s) services(p, `${at}.service`, s.service);
  });
}

/** A content resource (an annotation's body, a thumbnail, a SpecificResource's source), told apart by type as the schema's one-of does. */
function resource(p: Problems, path: string, r: Json) {
  if (!objectOf(p, path, r)) return;
  switch (r.type) {
    case "SpecificResource":
      return specificResource(p, path, r);
    case "Feature":
      return feature(p, path, r);
    case "TextualBody":
      return p.need(typeof r.value === "string", `${path}.value`, "a TextualBody must have a string value");
    case "Choice":
      return list(p, `${path}.items`, r.items, resource);
  }
  // Anything else is an ordinary resource: an id and a type (so a GeoJSON FeatureCollection, which has no id, is none).
  classBasics(p, path, r);
  for (const key of ["width", "height"]) if (key in r) dimension(p, `${path}.${key}`, r[key]);
  if ("format" in r) format(p, `${path}.format`, r.format);
  if ("service" in r) services(p, `${path}.service`, r.service);
  if ("thumbnail" in r) list(p, `${path}.thumbnail`, r.thumbnail, resource);
  if ("partOf" in r) list(p, `${path}.partOf`, r.partOf, (p, at, x) => objectOf(p, at, x) && classBasics(p, at, x));
}

/** A SpecificResource: a source (an id or a resource) and selectors the schema knows. */
function specificResource(p: Problems, path: string, r: Json) {
  if (p.need("source" in r, `${path}.source`, "a SpecificResource must have a source")) {
    if (typeof r.source === "string") id(p, `${path}.source`, r.source);
    else resource(p, `${path}.source`, r.source);
  }
  if ("selector" in r) for (const [i, s] of (Array.isArray(r.selector) ? r.selector : [r.selector]).entries()) selector(p, Array.isArray(r.selector) ? `${path}.selector[${i}]` : `${path}.selector`, s);
}

const SELECTORS: Record<string, string[]> = {
  SvgSelector: ["value"],
  FragmentSelector: ["value"],
  PointSelector: [],
  ImageApiSelector: [],
  XPathSelector: ["value"],
  CssSelector: ["value"],
  TextQuoteSelector: ["exact"],
  TextPositionSelector: ["start", "end"],
  DataPositionSelector: ["start", "end"],
  RangeSelector: ["startSelector", "endSelector"],
};

/** A selector: an http URI, or one of the Web Annotation selectors with what it requires (an SvgSelector its value). */
function selector(p: Problems, path: string, s: Json) {
  if (typeof s === "string") return id(p, path, s);
  if (!objectOf(p, path, s)) return;
  const required = SELECTORS[s.type];
  if (!p.need(required !== undefined, `${path}.type`, "a selector must be of a Web Annotation selector type")) return;
  for (const key of required) p.need(key in s, `${path}.${key}`, `a ${s.type} must have ${key}`);
}

/** A GeoJSON Feature (navPlace's): type Feature, a geometry with a type and coordinates, properties an object, an id if any http. */
function feature(p: Problems, path: string, f: Json) {
  if (!objectOf(p, path, f)) return;
  p.need(f.type === "Feature", `${path}.type`, "a feature's type must be Feature");
  if ("id" in f) id(p, `${path}.id`, f.id);
  if ("properties" in f) objectOf(p, `${path}.properties`, f.properties);
  if (p.need(isObject(f.geometry), `${path}.geometry`, "a feature must have a geometry")) {
    p.need(typeof f.geometry.type === "string", `${path}.geometry.type`, "a geometry must have a type");
    p.need(Array.isArray(f.geometry.coordinates), `${path}.geometry.coordinates`, "a geometry must have coordinates");
  }
}

/** navPlace: an object with a type, an id if any http, its features GeoJSON Features. */
function navPlace(p: Problems, path: string, v: Json) {
  if (!objectOf(p, path, v)) return;
  p.need(typeof v.type === "string", `${path}.type`, "navPlace must have a type");
  if ("id" in v) id(p, `${path}.id`, v.id);
  if ("features" in v) list(p, `${path}.features`, v.features, feature);
}

/** seeAlso (and other linked resources): each an id, a type, a label if any, a media type, a profile string. */
function linked(p: Problems, path: string, v: unknown) {
  list(p, path, v, (p, at, r) => {
    if (!objectOf(p, at, r)) return;
    classBasics(p, at, r);
    if ("format" in r) format(p, `${at}.format`, r.format);
    if ("profile" in r) p.need(typeof r.profile === "string", `${at}.profile`, "a linked resource's profile must be a string");
  });
}

// ---- annotations, canvases, manifests ----

const ANNOTATION_PAGE_KEYS = new Set(["@context", "id", "type", "rendering", "label", "service", "thumbnail", "items", "partOf", "next", "prev", "first", "last"]);

/** An AnnotationPage: id, type, items required, nothing the schema does not list; its items Annotations. */
function annotationPage(p: Problems, path: string, page: Json, painting: boolean) {
  if (!objectOf(p, path, page)) return;
  classBasics(p, path, page, "AnnotationPage");
  for (const key of Object.keys(page)) p.need(ANNOTATION_PAGE_KEYS.has(key), `${path}.${key}`, "an AnnotationPage may hold no property the specification does not define");
  if (p.need("items" in page, `${path}.items`, "an AnnotationPage must have items")) list(p, `${path}.items`, page.items, (p, at, a) => annotation(p, at, a, painting));
}

/** An Annotation: id and type; its motivation a string or strings; its body resources; its target an http URI, a SpecificResource or a reference. */
function annotation(p: Problems, path: string, a: Json, painting: boolean) {
  if (!objectOf(p, path, a)) return;
  classBasics(p, path, a, "Annotation");
  const motivations = typeof a.motivation === "string" ? [a.motivation] : a.motivation;
  // The schema lets motivation be absent; the specification has the Annotations of a Canvas's
  // items paint (motivation "painting"), and the Web Annotation model asks one of every annotation.
  if (p.need(Array.isArray(motivations) && motivations.length > 0 && motivations.every((m: unknown) => typeof m === "string"), `${path}.motivation`, "an Annotation must have a motivation, a string or strings (spec)"))
    if (painting) p.need(motivations.includes("painting"), `${path}.motivation`, "an Annotation in a Canvas's items must paint (spec)");
  if ("body" in a) (Array.isArray(a.body) ? list : (p: Problems, at: string, b: Json) => resource(p, at, b))(p, `${path}.body`, a.body, resource);
  if (p.need("target" in a, `${path}.target`, "an Annotation must have a target (spec)")) {
    for (const [i, t] of (Array.isArray(a.target) ? a.target : [a.target]).entries()) {
      const at = Array.isArray(a.target) ? `${path}.target[${i}]` : `${path}.target`;
      if (typeof t === "string") id(p, at, t);
      else if (isObject(t) && (t.type === "SpecificResource" || "source" in t)) specificResource(p, at, t);
      else if (objectOf(p, at, t)) reference(p, at, t, ["Canvas", "Manifest"]);
    }
  }
}

/** A reference to a resource described elsewhere: id, one of the given types, a label if any, and no items. */
function reference(p: Problems, path: string, r: Json, types: string[]) {
  classBasics(p, path, r);
  p.need(types.includes(r.type), `${path}.type`, `a reference here must be to a ${types.join(" or ")}`);
  p.need(!("items" in r), `${path}.items`, "a reference must not embed items");
}

/** A Canvas: id, type; items AnnotationPages that paint; width and height together, integers above 0; annotations pages or references. */
function canvas(p: Problems, path: string, c: Json) {
  if (!objectOf(p, path, c)) return;
  classBasics(p, path, c, "Canvas");
  p.need("width" in c || "height" in c || "duration" in c, path, "a Canvas must have width and height, or duration");
  p.need("width" in c === "height" in c, path, "a Canvas with a width must have a height, and with a height a width");
  for (const key of ["width", "height"]) if (key in c) dimension(p, `${path}.${key}`, c[key]);
  if (p.need("items" in c, `${path}.items`, "a Canvas must have items")) list(p, `${path}.items`, c.items, (p, at, page) => annotationPage(p, at, page, true));
  if ("annotations" in c) list(p, `${path}.annotations`, c.annotations, (p, at, page) => (typeof page === "string" ? undefined : "items" in page ? annotationPage(p, at, page, false) : reference(p, at, page, ["AnnotationPage"])));
  if ("thumbnail" in c) list(p, `${path}.thumbnail`, c.thumbnail, resource);
  descriptive(p, path, c);
}

/** The descriptive properties any of these classes may have. */
function descriptive(p: Problems, path: string, r: Json) {
  if ("summary" in r) languageMap(p, `${path}.summary`, r.summary);
  if ("metadata" in r) list(p, `${path}.metadata`, r.metadata, labelValue);
  if ("requiredStatement" in r) labelValue(p, `${path}.requiredStatement`, r.requiredStatement);
  if ("rights" in r) rights(p, `${path}.rights`, r.rights);
  if ("navPlace" in r) navPlace(p, `${path}.navPlace`, r.navPlace);
  if ("seeAlso" in r) linked(p, `${path}.seeAlso`, r.seeAlso);
  if ("partOf" in r) list(p, `${path}.partOf`, r.partOf, (p, at, x) => objectOf(p, at, x) && classBasics(p, at, x));
}

/** @context: the Presentation 3 context alone, or a list of http URIs; the validator reads the version from the last, so it must be Presentation 3's. */
function context(p: Problems, doc: Json) {
  const c = doc["@context"];
  if (typeof c === "string") return p.need(c === PRESENTATION_3, "$.@context", "a lone @context must be Presentation 3's");
  if (!p.need(Array.isArray(c) && c.length > 0, "$.@context", "@context must be a URI or a list of them")) return;
  c.forEach((u: unknown, i: number) => p.need(typeof u === "string" && /^http/.test(u), `$.@context[${i}]`, "each @context must be an http URI"));
  p.need(c[c.length - 1] === PRESENTATION_3, `$.@context[${c.length - 1}]`, "the last @context must be Presentation 3's (the version is read from it)");
}

const MANIFEST_KEYS = new Set(
  "@context id label type metadata summary requiredStatement rendering service services viewingDirection placeholderCanvas accompanyingCanvas rights start navDate navPlace provider seeAlso thumbnail homepage behavior partOf items structures annotations".split(" "),
);

/** A Manifest: @context, id, type, label, items (Canvases) required; no property the schema does not list; published where its id says. */
function checkManifest(doc: Json, url?: string): string[] {
  const p = new Problems();
  if (!objectOf(p, "$", doc)) return p.list;
  context(p, doc);
  classBasics(p, "$", doc, "Manifest");
  if (url !== undefined) p.need(doc.id === url, "$.id", "a manifest's id must be the URL it is published at");
  p.need("label" in doc, "$.label", "a Manifest must have a label");
  for (const key of Object.keys(doc)) p.need(MANIFEST_KEYS.has(key), `$.${key}`, "a Manifest may hold no property the specification does not define");
  if (p.need("items" in doc, "$.items", "a Manifest must have items")) list(p, "$.items", doc.items, canvas);
  if ("thumbnail" in doc) list(p, "$.thumbnail", doc.thumbnail, resource);
  descriptive(p, "$", doc);
  return p.list;
}

/** A Collection: @context, id, type, label; its items Manifest references (a label: spec), labelled Collection references, or Collections; partOf classes. */
function checkCollection(doc: Json, url?: string): string[] {
  const p = new Problems();
  if (!objectOf(p, "$", doc)) return p.list;
  context(p, doc);
  classBasics(p, "$", doc, "Collection");
  if (url !== undefined) p.need(doc.id === url, "$.id", "a collection's id must be the URL it is published at");
  p.need("label" in doc, "$.label", "a Collection must have a label");
  if (p.need("items" in doc, "$.items", "a Collection must have items (spec)"))
    list(p, "$.items", doc.items, (p, at, item) => {
      if (!objectOf(p, at, item)) return;
      if (item.type === "Collection" && "items" in item) return; // an embedded Collection: none here
      reference(p, at, item, ["Manifest", "Collection"]);
      // The schema asks a label of a referenced Collection; the specification of a referenced Manifest too.
      p.need("label" in item, `${at}.label`, `a referenced ${item.type} must have a label${item.type === "Manifest" ? " (spec)" : ""}`);
    });
  descriptive(p, "$", doc);
  return p.list;
}

// ---- the documents ----

describe("the manifests, by the official validator's rules", () => {
  for (const [name, doc] of Object.entries(MANIFESTS)) {
    // Two variants depart from the schema, deliberately: see the tests of each below.
    if (name === "georeferenced" || name === "restricted, external") continue;
    it(`${name}: breaks none`, () => {
      expect(checkManifest(doc, MANIFEST_PARTS[name].id)).toEqual([]);
    });
  }

  it("the variants hold what the rules are meant to reach", () => {
    const g = MANIFESTS.georeferenced;
    expect(g.navPlace?.features).toHaveLength(1);
    expect(g.items[0].annotations?.[0].items[0]).toMatchObject({ motivation: "georeferencing", target: { type: "SpecificResource", selector: { type: "SvgSelector" } } });
    expect(g.seeAlso).toHaveLength(2);
    expect(MANIFESTS.described).toHaveProperty("rights");
    expect(MANIFESTS.described).toHaveProperty("metadata");
    expect(MANIFESTS["restricted, active"].items[0].items[0].items[0].body.service[0].service?.[0]).toMatchObject({ type: "AuthProbeService2", service: [{ type: "AuthAccessService2" }] });
    expect(MANIFESTS["restricted, active"].thumbnail?.[0].id).toContain("~degraded");
    expect(MANIFESTS["plain, too large for a thumbnail"]).not.toHaveProperty("thumbnail");
  });

  it("georeferenced: breaks only the schema's idea of a body, which the Georeference Extension's FeatureCollection is not", () => {
    // The schema's body is an ordinary resource (with an id), a TextualBody, a SpecificResource, a
    // Choice or one GeoJSON Feature; the Georeference Extension makes the body a FeatureCollection
    // (no id) of control points, and Allmaps reads it so. The official validator would reject the
    // manifest here, as it would any Georeference Extension annotation; navPlace, the target, its
    // SvgSelector and the ImageService3 source all pass.
    expect(checkManifest(MANIFESTS.georeferenced, MANIFEST_PARTS.georeferenced.id)).toEqual(["$.items[0].annotations[0].items[0].body.id: id must be a string starting with http"]);
  });

  it("restricted, external: breaks only the schema's demand of an id on every service", () => {
    // An external access service is never opened by the client, and Authorization Flow 2.0 lets
    // it go without an id; the schema asks every service of an id (or a 2.x @id), so the
    // official validator would reject this manifest.
    const probe = "$.items[0].items[0].items[0].body.service[0].service[0]";
    expect(checkManifest(MANIFESTS["restricted, external"], MANIFEST_PARTS["restricted, external"].id)).toEqual([`${probe}.service[0].id: id must be a string starting with http`]);
  });
});

describe("the collection's pages, by the official validator's rules", () => {
  for (const [name, doc] of Object.entries(COLLECTIONS)) {
    const parts = COLLECTION_PARTS[name];
    it(`${name}: breaks none`, () => {
      expect(checkCollection(doc, parts.after === undefined ? parts.collectionId : parts.pageAfter(parts.after))).toEqual([]);
    });
  }

  it("the pages hold what the rules are meant to reach", () => {
    expect(COLLECTIONS["the first page, with a next page"].items.at(-1)).toMatchObject({ type: "Collection" });
    expect(COLLECTIONS["a later page, with a next page"].partOf).toHaveLength(1);
    expect(COLLECTIONS["the last page"].items.map((i: Json) => i.type)).toEqual(["Manifest"]);
  });
});

// ---- each rule can fail ----

const good = () => structuredClone(MANIFESTS.described) as Json;
const goodGeo = () => structuredClone(MANIFESTS.georeferenced) as Json;
const goodRestricted = () => structuredClone(MANIFESTS["restricted, active"]) as Json;
const goodPage = () => structuredClone(COLLECTIONS["a later page, with a next page"]) as Json;
const image = (m: Json) => m.items[0].items[0].items[0];

/** [what is broken, the document, the problem expected among those found] */
const BROKEN: [string, () => string[], string][] = [
  ["a non-URI manifest id", () => checkManifest(Object.assign(good(), { id: "urn:x:1" })), "$.id: id must be a string starting with http"],
  ["a manifest id with a space", () => checkManifest(Object.assign(good(), { id: "https://a b/m" })), "$.id: id must be an absolute http(s) URI (spec)"],
  ["a manifest not where its id says", () => checkManifest(good(), "https://elsewhere.example.org/m.json"), "$.id: a manifest's id must be the URL it is published at"],
  ["the wrong type", () => checkManifest(Object.assign(good(), { type: "Collection" })), "$.type: type must be Manifest"],
  ["a missing label", () => checkManifest((({ label, ...m }) => m)(good())), "$.label: a Manifest must have a label"],
  ["a label not a language map", () => checkManifest(Object.assign(good(), { label: "Graz" })), "$.label: a language map must be an object"],
  ["a label's values not a list", () => checkManifest(Object.assign(good(), { label: { en: "Graz" } })), "$.label.en: a language map's values must be lists of strings"],
  ["a language key with a digit", () => checkManifest(Object.assign(good(), { summary: { "es-419": ["x"] } })), "$.summary.es-419: a language map's keys must be letters and hyphens, or none"],
  ["no items", () => checkManifest((({ items, ...m }) => m)(good())), "$.items: a Manifest must have items"],
  ["a property the specification lacks", () => checkManifest(Object.assign(good(), { description: "x" })), "$.description: a Manifest may hold no property the specification does not define"],
  ["a lone foreign @context", () => checkManifest(Object.assign(good(), { "@context": "http://iiif.io/api/presentation/2/context.json" })), "$.@context: a lone @context must be Presentation 3's"],
  ["Presentation's @context not last", () => checkManifest(Object.assign(goodRestricted(), { "@context": [...goodRestricted()["@context"]].reverse() })), "$.@context[1]: the last @context must be Presentation 3's (the version is read from it)"],
  ["an https Creative Commons rights URI", () => checkManifest(Object.assign(good(), { rights: "https://creativecommons.org/licenses/by/4.0/" })), "$.rights: rights must be an http Creative Commons or RightsStatements.org URI"],
  ["a bad rights URI", () => checkManifest(Object.assign(good(), { rights: "http://example.org/licence" })), "$.rights: rights must be an http Creative Commons or RightsStatements.org URI"],
  ["a requiredStatement without value", () => checkManifest(Object.assign(good(), { requiredStatement: { label: { en: ["A"] } } })), "$.requiredStatement.value: a label and value pair must have value"],
  ["a metadata entry without label", () => checkManifest(Object.assign(good(), { metadata: [{ value: { en: ["A"] } }] })), "$.metadata[0].label: a label and value pair must have label"],
  ["a canvas with a float width", () => checkManifest(((m) => ((m.items[0].width = 1000.5), m))(good())), "$.items[0].width: a dimension must be an integer above 0"],
  ["a canvas with a zero height", () => checkManifest(((m) => ((m.items[0].height = 0), m))(good())), "$.items[0].height: a dimension must be an integer above 0"],
  ["a canvas with a width and no height", () => checkManifest(((m) => (delete m.items[0].height, m))(good())), "$.items[0]: a Canvas with a width must have a height, and with a height a width"],
  ["a canvas with no extent", () => checkManifest(((m) => (delete m.items[0].height, delete m.items[0].width, m))(good())), "$.items[0]: a Canvas must have width and height, or duration"],
  ["a canvas without items", () => checkManifest(((m) => (delete m.items[0].items, m))(good())), "$.items[0].items: a Canvas must have items"],
  ["a canvas of the wrong type", () => checkManifest(((m) => ((m.items[0].type = "Image"), m))(good())), "$.items[0].type: type must be Canvas"],
  ["an annotation page with a foreign property", () => checkManifest(((m) => ((m.items[0].items[0].motivation = "painting"), m))(good())), "$.items[0].items[0].motivation: an AnnotationPage may hold no property the specification does not define"],
  ["an annotation page without items", () => checkManifest(((m) => (delete m.items[0].items[0].items, m))(good())), "$.items[0].items[0].items: an AnnotationPage must have items"],
  ["an annotation without motivation", () => checkManifest(((m) => (delete image(m).motivation, m))(good())), "$.items[0].items[0].items[0].motivation: an Annotation must have a motivation, a string or strings (spec)"],
  ["a content annotation that does not paint", () => checkManifest(((m) => ((image(m).motivation = "commenting"), m))(good())), "$.items[0].items[0].items[0].motivation: an Annotation in a Canvas's items must paint (spec)"],
  ["an annotation without target", () => checkManifest(((m) => (delete image(m).target, m))(good())), "$.items[0].items[0].items[0].target: an Annotation must have a target (spec)"],
  ["an annotation whose target is no URI", () => checkManifest(((m) => ((image(m).target = "canvas/1"), m))(good())), "$.items[0].items[0].items[0].target: id must be a string starting with http"],
  ["an annotation of the wrong type", () => checkManifest(((m) => ((image(m).type = "Annotation2"), m))(good())), "$.items[0].items[0].items[0].type: type must be Annotation"],
  ["a body with a float height", () => checkManifest(((m) => ((image(m).body.height = 447.5), m))(good())), "$.items[0].items[0].items[0].body.height: a dimension must be an integer above 0"],
  ["a body with a bad format", () => checkManifest(((m) => ((image(m).body.format = "JPEG"), m))(good())), "$.items[0].items[0].items[0].body.format: format must be a media type such as image/jpeg"],
  ["a body without id", () => checkManifest(((m) => (delete image(m).body.id, m))(good())), "$.items[0].items[0].items[0].body.id: id must be a string starting with http"],
  ["a service not in a list", () => checkManifest(((m) => ((image(m).body.service = image(m).body.service[0]), m))(good())), "$.items[0].items[0].items[0].body.service: must be a list"],
  ["a service without type", () => checkManifest(((m) => (delete image(m).body.service[0].type, m))(good())), "$.items[0].items[0].items[0].body.service[0].type: type must be a string"],
  ["a service profile not a string", () => checkManifest(((m) => ((image(m).body.service[0].profile = ["level2"]), m))(good())), "$.items[0].items[0].items[0].body.service[0].profile: a service's profile must be a string"],
  ["a 2.x service without @type", () => checkManifest(((m) => ((image(m).body.service = [{ "@id": "https://x.example.org/s" }]), m))(good())), "$.items[0].items[0].items[0].body.service[0].@type: a 2.x service must have an @type"],
  ["a probe without id", () => checkManifest(((m) => (delete image(m).body.service[0].service[0].id, m))(goodRestricted())), "$.items[0].items[0].items[0].body.service[0].service[0].id: id must be a string starting with http"],
  ["an access service with a label not a language map", () => checkManifest(((m) => ((image(m).body.service[0].service[0].service[0].label = "Log in"), m))(goodRestricted())), "$.items[0].items[0].items[0].body.service[0].service[0].service[0].label: a language map must be an object"],
  ["a thumbnail with a float width", () => checkManifest(((m) => ((m.thumbnail[0].width = 1.5), m))(goodRestricted())), "$.thumbnail[0].width: a dimension must be an integer above 0"],
  ["a thumbnail not in a list", () => checkManifest(((m) => ((m.items[0].thumbnail = m.items[0].thumbnail[0]), m))(good())), "$.items[0].thumbnail: must be a list"],
  ["a seeAlso without id", () => checkManifest(((m) => (delete m.seeAlso[0].id, m))(goodGeo())), "$.seeAlso[0].id: id must be a string starting with http"],
  ["a seeAlso with a bad format", () => checkManifest(((m) => ((m.seeAlso[1].format = "json"), m))(goodGeo())), "$.seeAlso[1].format: format must be a media type such as image/jpeg"],
  ["a seeAlso profile not a string", () => checkManifest(((m) => ((m.seeAlso[0].profile = 3), m))(goodGeo())), "$.seeAlso[0].profile: a linked resource's profile must be a string"],
  ["a navPlace without type", () => checkManifest(((m) => (delete m.navPlace.type, m))(goodGeo())), "$.navPlace.type: navPlace must have a type"],
  ["a navPlace feature of another type", () => checkManifest(((m) => ((m.navPlace.features[0].type = "Polygon"), m))(goodGeo())), "$.navPlace.features[0].type: a feature's type must be Feature"],
  ["a navPlace feature without coordinates", () => checkManifest(((m) => (delete m.navPlace.features[0].geometry.coordinates, m))(goodGeo())), "$.navPlace.features[0].geometry.coordinates: a geometry must have coordinates"],
  ["a navPlace feature with a non-URI id", () => checkManifest(((m) => ((m.navPlace.features[0].id = "feature-1"), m))(goodGeo())), "$.navPlace.features[0].id: id must be a string starting with http"],
  ["a georeference page that is not one", () => checkManifest(((m) => ((m.items[0].annotations[0].type = "AnnotationList"), m))(goodGeo())), "$.items[0].annotations[0].type: type must be AnnotationPage"],
  ["a georeference annotation without motivation", () => checkManifest(((m) => (delete m.items[0].annotations[0].items[0].motivation, m))(goodGeo())), "$.items[0].annotations[0].items[0].motivation: an Annotation must have a motivation, a string or strings (spec)"],
  ["a SpecificResource without source", () => checkManifest(((m) => (delete m.items[0].annotations[0].items[0].target.source, m))(goodGeo())), "$.items[0].annotations[0].items[0].target.source: a SpecificResource must have a source"],
  ["a SpecificResource source with a float width", () => checkManifest(((m) => ((m.items[0].annotations[0].items[0].target.source.width = 10.5), m))(goodGeo())), "$.items[0].annotations[0].items[0].target.source.width: a dimension must be an integer above 0"],
  ["a source partOf with a non-URI id", () => checkManifest(((m) => ((m.items[0].annotations[0].items[0].target.source.partOf[0].id = "canvas/1"), m))(goodGeo())), "$.items[0].annotations[0].items[0].target.source.partOf[0].id: id must be a string starting with http"],
  ["an SvgSelector without value", () => checkManifest(((m) => (delete m.items[0].annotations[0].items[0].target.selector.value, m))(goodGeo())), "$.items[0].annotations[0].items[0].target.selector.value: a SvgSelector must have value"],
  ["a selector of an unknown type", () => checkManifest(((m) => ((m.items[0].annotations[0].items[0].target.selector.type = "SVGSelector"), m))(goodGeo())), "$.items[0].annotations[0].items[0].target.selector.type: a selector must be of a Web Annotation selector type"],
  ["a target reference embedding items", () => checkManifest(((m) => ((image(m).target = { id: m.items[0].id, type: "Canvas", items: [] }), m))(good())), "$.items[0].items[0].items[0].target.items: a reference must not embed items"],
  ["a collection with a non-URI id", () => checkCollection(Object.assign(goodPage(), { id: "collection.json?page=graz" })), "$.id: id must be a string starting with http"],
  ["a collection not where its id says", () => checkCollection(goodPage(), "https://tiles.example.org/iiif/3/collection.json"), "$.id: a collection's id must be the URL it is published at"],
  ["a collection without label", () => checkCollection((({ label, ...c }) => c)(goodPage())), "$.label: a Collection must have a label"],
  ["a collection of the wrong type", () => checkCollection(Object.assign(goodPage(), { type: "Manifest" })), "$.type: type must be Collection"],
  ["a collection with a two-part @context, Presentation's first", () => checkCollection(Object.assign(goodPage(), { "@context": [PRESENTATION_3, "http://example.org/x.json"] })), "$.@context[1]: the last @context must be Presentation 3's (the version is read from it)"],
  ["a referenced manifest without label", () => checkCollection(((c) => (delete c.items[0].label, c))(goodPage())), "$.items[0].label: a referenced Manifest must have a label (spec)"],
  ["a referenced next page without label", () => checkCollection(((c) => (delete c.items.at(-1).label, c))(goodPage())), "$.items[2].label: a referenced Collection must have a label"],
  ["a referenced manifest with a non-URI id", () => checkCollection(((c) => ((c.items[1].id = "plain/manifest.json"), c))(goodPage())), "$.items[1].id: id must be a string starting with http"],
  ["a referenced manifest embedding items", () => checkCollection(((c) => ((c.items[1].items = [{}]), c))(goodPage())), "$.items[1].items: a reference must not embed items"],
  ["a collection item of a type it may not hold", () => checkCollection(((c) => ((c.items[0].type = "Canvas"), c))(goodPage())), "$.items[0].type: a reference here must be to a Manifest or Collection"],
  ["a partOf not in a list", () => checkCollection(((c) => ((c.partOf = c.partOf[0]), c))(goodPage())), "$.partOf: must be a list"],
  ["a partOf without type", () => checkCollection(((c) => (delete c.partOf[0].type, c))(goodPage())), "$.partOf[0].type: type must be a string"],
  ["a partOf with a label not a language map", () => checkCollection(((c) => ((c.partOf[0].label = "All images"), c))(goodPage())), "$.partOf[0].label: a language map must be an object"],
];

describe("each rule fails where it should", () => {
  for (const [what, check, expected] of BROKEN) {
    it(`finds ${what}`, () => {
      expect(check()).toContain(expected);
    });
  }
});

// ---- what a catalog may say that the validator would refuse ----

describe("a description the project accepts, in a manifest the official validator accepts", () => {
  const described = (description: unknown) => {
    const reading = readDescription(description);
    if (!("description" in reading)) throw new Error(reading.unreadable);
    const parts = MANIFEST_PARTS.plain;
    return checkManifest(manifest({ ...parts, image: { ...parts.image, info: source("plain", [[1000, 800]], { description: reading.description }) } }));
  };

  it("an http Creative Commons licence, a RightsStatements.org statement, a regional language tag", () => {
    expect(described({ rights: "http://creativecommons.org/licenses/by/4.0/", label: { "de-AT": ["Graz"] } })).toEqual([]);
    expect(described({ rights: "http://rightsstatements.org/vocab/InC/1.0/" })).toEqual([]);
    expect(described({ rights: "http://creativecommons.org/publicdomain/zero/1.0/" })).toEqual([]);
  });

  // What the validator refuses in a description never reaches a manifest: the catalog's reader
  // refuses it first (an https rights URI; a language tag with digits, which BCP 47 allows but
  // the validator's keys do not).
  it("an https Creative Commons licence and a language tag with digits: refused by the validator, and by readDescription before", () => {
    const unread = (description: object) => {
      const parts = MANIFEST_PARTS.plain;
      return checkManifest(manifest({ ...parts, image: { ...parts.image, info: source("plain", [[1000, 800]], { description }) } }));
    };
    expect(unread({ rights: "https://creativecommons.org/licenses/by/4.0/" })).not.toEqual([]);
    expect(unread({ label: { "es-419": ["Mapa"] } })).not.toEqual([]);
    expect(readDescription({ rights: "https://creativecommons.org/licenses/by/4.0/" })).toHaveProperty("unreadable");
    expect(readDescription({ label: { "es-419": ["Mapa"] } })).toHaveProperty("unreadable");
  });
});
