// The environment the publishing commands read: the same TESSERA_S3_* variables as the
// decoder, and the edge's address and token, each failure naming its variable.
import { describe, expect, it } from "vitest";
import { readEdgeConfig, readStoreConfig } from "../../cli/store-config";
import { ConfigError } from "../../shared/config";

describe("store and edge configuration", () => {
  it("reads the store as the decoder does, with its defaults", () => {
    expect(readStoreConfig({ TESSERA_S3_BUCKET: "b" })).toEqual({ bucket: "b", prefix: "", region: "us-east-1", endpoint: undefined });
    expect(readStoreConfig({ TESSERA_S3_BUCKET: "b", TESSERA_S3_PREFIX: "p/", TESSERA_S3_REGION: "eu-west-3", TESSERA_S3_ENDPOINT: "http://127.0.0.1:7480" })).toEqual({
      bucket: "b",
      prefix: "p/",
      region: "eu-west-3",
      endpoint: "http://127.0.0.1:7480",
    });
  });

  it("names the variable that is missing or wrong", () => {
    expect(() => readStoreConfig({})).toThrow(new ConfigError("TESSERA_S3_BUCKET", "is required (the bucket tessera publishes to, as the decoder reads it)"));
    expect(() => readStoreConfig({ TESSERA_S3_BUCKET: "b", TESSERA_S3_ENDPOINT: "localhost:7480" })).toThrow(/^TESSERA_S3_ENDPOINT must be an http\(s\) URL/);
    expect(() => readEdgeConfig({ TESSERA_ADMIN_TOKEN: "t" })).toThrow(/^TESSERA_EDGE_URL is required/);
    expect(() => readEdgeConfig({ TESSERA_EDGE_URL: "https://iiif.example.org" })).toThrow(/^TESSERA_ADMIN_TOKEN is required/);
  });

  it("refuses an address with credentials in it, and never repeats them", () => {
    for (const url of ["http://user:s3cret-pw@iiif.example.org", "https://s3cret-pw@iiif.example.org", "ftp://user:s3cret-pw@iiif.example.org", "user:s3cret-pw@iiif.example.org"]) {
      let message = "";
      try {
        readEdgeConfig({ TESSERA_EDGE_URL: url, TESSERA_ADMIN_TOKEN: "t" });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, url).toMatch(/^TESSERA_EDGE_URL /);
      expect(message, url).not.toContain("s3cret-pw");
    }
    expect(() => readEdgeConfig({ TESSERA_EDGE_URL: "http://user:pw@iiif.example.org", TESSERA_ADMIN_TOKEN: "t" })).toThrow(/must not carry credentials/);
    // The decoder's addresses follow the same rule.
    expect(() => readStoreConfig({ TESSERA_S3_BUCKET: "b", TESSERA_S3_ENDPOINT: "http://key:secret@rgw:7480" })).toThrow(/^TESSERA_S3_ENDPOINT must not carry credentials/);
  });

  it("reads the edge's address and token", () => {
    expect(readEdgeConfig({ TESSERA_EDGE_URL: "https://iiif.example.org", TESSERA_ADMIN_TOKEN: "t" })).toEqual({ url: "https://iiif.example.org", adminToken: "t" });
  });
});
