// A catalog entry's description as readDescription reads it: every field good and bad, strings a
// manifest must carry as they are (quotes, </script>, U+2028), the bounds that keep a manifest
// small, fields this version does not know, and rights URIs the Presentation API allows against
// near misses a publisher could type.
import { describe, expect, it } from "vitest";
import { DESCRIPTION_LIMITS, readDescription, rightsProblem } from "../../shared/description";

const unreadable = (value: unknown) => {
  const reading = readDescription(value);
  return "unreadable" in reading ? reading.unreadable : undefined;
};
const text = (n: number) => "x".repeat(n);
const pairs = (n: number) => Array.from({ length: n }, (_, i) => ({ label: { en: [`k${i}`] }, value: { none: [`v${i}`] } }));
const languages = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${String.fromCharCode(97 + i)}`, ["x"]]));

describe("readDescription", () => {
  it("reads every field as written, hostile strings untouched; absent or empty is an empty description", () => {
    const hostile = ['"quoted" \\ \'', "</script><script>alert(1)</script>", "line\u2028separator\u2029", text(DESCRIPTION_LIMITS.text)];
    const full = {
      label: { en: ["Map of Graz, 1850"], "de-AT": ["Karte von Graz"], none: ["1850"] },
      summary: { en: hostile },
      requiredStatement: { label: { en: ["Attribution"] }, value: { en: ["Graz City Archive"] } },
      rights: "http://creativecommons.org/licenses/by-nc-sa/4.0/",
      metadata: pairs(DESCRIPTION_LIMITS.pairs),
    };
    expect(readDescription(full)).toEqual({ description: full });
    expect(readDescription(undefined)).toEqual({ description: {} });
    expect(readDescription({})).toEqual({ description: {} });
    expect(readDescription({ label: languages(DESCRIPTION_LIMITS.languages) })).toEqual({ description: { label: languages(10) } });
  });

  it.each([
    ["not an object", "Map of Graz", "description is not an object"],
    ["a list", [{ en: ["x"] }], "description is not an object"],
    ["null", null, "description is not an object"],
    ["an unknown field", { label: { en: ["x"] }, homepage: "https://x" }, "description has fields this version does not know: homepage"],
    ["a string label", { label: "Graz" }, 'label is not a language map such as {"en": ["…"]}'],
    ["an empty label", { label: {} }, "label has 0 languages, not 1 to 10"],
    ["too many languages", { summary: languages(11) }, "summary has 11 languages, not 1 to 10"],
    ["a language that is no tag", { label: { "en US": ["x"] } }, 'label has a language "en US" that is not a language tag (such as en, de-AT) or "none"'],
    ["a hostile language", { label: { "</script>": ["x"] } }, 'label has a language "</script>" that is not a language tag (such as en, de-AT) or "none"'],
    ["a value that is no list", { label: { en: "Graz" } }, "label.en is not a list of 1 to 10 strings"],
    ["no lines", { label: { en: [] } }, "label.en is not a list of 1 to 10 strings"],
    ["too many lines", { summary: { en: Array(11).fill("x") } }, "summary.en is not a list of 1 to 10 strings"],
    ["an empty string", { label: { en: [""] } }, "label.en holds something other than strings of 1 to 2000 characters"],
    ["a number", { label: { en: [1850] } }, "label.en holds something other than strings of 1 to 2000 characters"],
    ["10 kB of text", { summary: { en: [text(10_000)] } }, "summary.en holds something other than strings of 1 to 2000 characters"],
    ["a statement without value", { requiredStatement: { label: { en: ["Attribution"] } } }, 'requiredStatement.value is not a language map such as {"en": ["…"]}'],
    ["a statement with more", { requiredStatement: { label: { en: ["a"] }, value: { en: ["b"] }, url: "x" } }, 'requiredStatement is not {"label": {…}, "value": {…}}'],
    ["a statement that is text", { requiredStatement: "Graz City Archive" }, 'requiredStatement is not {"label": {…}, "value": {…}}'],
    ["rights that are no string", { rights: { uri: "http://creativecommons.org/licenses/by/4.0/" } }, "rights is not a string"],
    ["metadata that is no list", { metadata: { Date: "1850" } }, "metadata is not a list of at most 50 {label, value} pairs"],
    ["too many pairs", { metadata: pairs(51) }, "metadata is not a list of at most 50 {label, value} pairs"],
    ["a pair without label", { metadata: [...pairs(2), { value: { en: ["x"] } }] }, 'metadata[2].label is not a language map such as {"en": ["…"]}'],
    ["a pair with 10 kB", { metadata: [{ label: { en: ["Note"] }, value: { en: [text(10_240)] } }] }, "metadata[0].value.en holds something other than strings of 1 to 2000 characters"],
  ])("refuses %s, naming the field", (_, value, why) => {
    expect(unreadable(value)).toBe(why);
  });

  it("names only a few unknown fields, however many there are", () => {
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, 1]));
    expect(unreadable(many)).toBe("description has fields this version does not know: f0, f1, f2, f3, f4");
  });
});

describe("rightsProblem", () => {
  it.each([
    "http://creativecommons.org/licenses/by/4.0/",
    "http://creativecommons.org/licenses/by-nd/3.0/",
    "http://creativecommons.org/licenses/by-sa/3.0/at/",
    "http://creativecommons.org/publicdomain/zero/1.0/",
    "http://creativecommons.org/publicdomain/mark/1.0/",
    "http://rightsstatements.org/vocab/InC/1.0/",
    "http://rightsstatements.org/vocab/NoC-US/1.0/",
    "http://rightsstatements.org/vocab/InC-EDU/1.0/",
  ])("allows %s", (uri) => {
    expect(rightsProblem(uri)).toBeUndefined();
    expect(readDescription({ rights: uri })).toEqual({ description: { rights: uri } });
  });

  it.each([
    "https://creativecommons.org/licenses/by/4.0", // no final slash
    "https://creativecommons.org/licenses/by/4.0/", // the https form: not the identifier
    "https://rightsstatements.org/vocab/NoC-US/1.0/",
    "http://creativecommons.org/licenses/by/4.0/deed.de",
    "http://creativecommons.org/licenses/by/5.0/",
    "http://creativecommons.org/licenses/cc-by/4.0/",
    "http://www.creativecommons.org/licenses/by/4.0/",
    "http://creativecommons.org.evil.example/licenses/by/4.0/",
    "http://rightsstatements.org/vocab/InC/2.0/",
    "http://rightsstatements.org/page/InC/1.0/",
    "http://rightsstatements.org/vocab/InC/1.0/?language=en",
    "http://rightsstatements.org/vocab/Copyrighted/1.0/",
    "CC-BY-4.0",
    "",
  ])("refuses the near miss %s, naming it and the kinds allowed", (uri) => {
    const why = rightsProblem(uri);
    expect(why).toBe(
      `rights ${JSON.stringify(uri)} is not a Creative Commons licence URI (such as http://creativecommons.org/licenses/by/4.0/) or a RightsStatements.org URI (such as http://rightsstatements.org/vocab/InC/1.0/), in its http form`,
    );
    expect(unreadable({ rights: uri })).toBe(why);
  });

  it("quotes at most 200 characters of a long or hostile URI", () => {
    const why = rightsProblem(`http://x/"</script>${text(10_000)}`)!;
    expect(why.length).toBeLessThan(420);
    expect(why).toContain('\\"</script>');
  });
});
