// POST /v1/invalidate/{id}[?member={asset}]: forget every opened snapshot of a source, so its next
// request opens the current version; with `member`, forget that asset of the mosaic instead
// (invalidate_source(mosaic, member)). Answers how many snapshots were dropped.
import { json } from "../http/answer";
import type { Handler } from "../http/router";

export const invalidate: Handler<{ id: string }> = ({ params, query }, decoder) => {
  const member = query.get("member");
  if (member !== null) return json(200, { id: params.id, member, dropped: decoder.mosaicTiles.members.invalidate(member) });
  return json(200, { id: params.id, dropped: decoder.snapshots.invalidate(params.id) });
};
