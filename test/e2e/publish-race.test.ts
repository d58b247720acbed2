// Publishers racing readers on the real stack (RGW, a versioned bucket and one without versions
// as on R2, an S3 decoder, the edge): two
// writers publish new versions of one source (upload, pin, invalidate), alternating two pictures
// told apart by their pixels, while readers fetch its tiles as fast as they can. Every image
// answered is wholly the picture of the version it names: none mixes two versions.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BucketKind } from "../../infra/local/s3";
import { versionLayoutOf } from "../../cli/publishing";
import { SourceStore } from "../../cli/source-store";
import { PATTERN, pictureOf, startPublishingStack, type PublishingStack } from "../support/publishing-stack";

describe.each<BucketKind>(["versioned", "unversioned"])("on a %s bucket", (kind) => {
  let publishing: PublishingStack;
  beforeAll(async () => {
    publishing = await startPublishingStack("race", 1, kind);
  });
  afterAll(() => publishing?.stop());

  it("no image answered while versions are published mixes two versions", async () => {
    const { client, bucket, stack, token, negative } = publishing;
    const store = new SourceStore(client, bucket, "", await versionLayoutOf(client, bucket));
    const published = new Map<string, "A" | "B">();
    // Published (uploaded and pinned) before anyone reads: without versions a source exists only
    // once pinned, and a reader asking before that is rightly answered 404, which the edge keeps
    // for ERROR_MAX_AGE (a request answered before a publish's invalidation can store it after).
    const first = await store.upload("race", PATTERN);
    published.set(first, "A");
    await store.pin("race", first);
    const end = Date.now() + 4000;
    // Four seconds, or on a loaded machine until readers have been answered both pictures (at most 20 s):
    // the race must show both, or it shows nothing about mixing them.
    const running = () => Date.now() < end || (Date.now() < end + 16_000 && !bothAnswered());

    const writer = async (picture: "A" | "B") => {
      while (running()) {
        const version = await store.upload("race", picture === "A" ? PATTERN : negative);
        published.set(version, picture);
        await store.pin("race", version);
        const res = await fetch(`${stack.url}/admin/sources/race/invalidate`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    };
    const answers: { status: number; version: string | null; body: Uint8Array; region: { x: number; y: number; w: number; h: number } }[] = [];
    let next = 0;
    const answered = (picture: "A" | "B") => answers.some((a) => a.status === 200 && published.get(a.version ?? "") === picture);
    const bothAnswered = () => answered("A") && answered("B");
    const reader = async () => {
      while (running()) {
        const i = next++;
        const region = { x: (i % 30) * 25, y: (Math.floor(i / 30) * 25) % 750, w: 250, h: 250 };
        const res = await fetch(`${stack.url}/iiif/3/race/${region.x},${region.y},${region.w},${region.h}/max/0/default.jpg`);
        answers.push({ status: res.status, version: res.headers.get("x-tessera-version"), body: new Uint8Array(await res.arrayBuffer()), region });
      }
    };
    await Promise.all([writer("B"), writer("A"), ...Array.from({ length: 6 }, reader)]);

    const served = answers.filter((a) => a.status === 200);
    const seen = { A: 0, B: 0 };
    for (const { version, body, region } of served) {
      const picture = published.get(version ?? "");
      expect(picture, `version ${version}`).toBeDefined();
      expect(await pictureOf(body, region), `${version} ${JSON.stringify(region)}`).toBe(picture);
      seen[picture!]++;
    }
    const others = answers.filter((a) => a.status !== 200).map((a) => a.status);
    console.log(`race: ${published.size} versions published, ${answers.length} answers, ${served.length} × 200 (A ${seen.A}, B ${seen.B}), others`, others);
    expect(seen.A).toBeGreaterThan(0);
    expect(seen.B).toBeGreaterThan(0);
    for (const status of others) expect([503]).toContain(status);
  }, 60_000);
});
