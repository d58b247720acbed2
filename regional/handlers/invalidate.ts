// POST /v1/invalidate/{id}[?member={asset}]: forget every opened snapshot of a source, so its next
// request opens the current version; with `member`, forget that asset of the mosaic instead
// (invalidate_source(mosaic, member)). Answers how many snapshots were dropped.
// A source's own files opened as mosaic members are forgotten with it: a publisher who restricts
// a source must not leave it painted by a mosaic that opened it while it was open.
import { json } from "../http/answer";
import type { Handler } from "../http/router";
import { sourceFileKeys } from "../source/source";

export const invalidate: Handler<{ id: string }> = ({ params, query }, decoder) => {
  const { members } = decoder.mosaicTiles;
  const member = query.get("member");
  if (member !== null) return json(200, { id: params.id, member, dropped: members.invalidate(member) });
  const asMember = sourceFileKeys(decoder.catalog.prefix ?? "", params.id).reduce((n, key) => n + members.invalidate(key), 0);
  return json(200, { id: params.id, dropped: decoder.snapshots.invalidate(params.id) + asMember });
};
