// The decodes a decoder ran, by its own request count: what the benches that count decodes read.
import type { Stack } from "../infra/local/stack";

/** Requests the stack's first decoder answered on its tiles route, whatever their status. */
export async function decoderTiles(stack: Stack): Promise<number> {
  const text = await (await fetch(`${stack.decoders[0].url}/metrics`)).text();
  const counts = [...text.matchAll(/^tessera_decoder_requests_total\{route="tiles",status="\d+"\} (\d+)$/gm)];
  return counts.reduce((sum, m) => sum + Number(m[1]), 0);
}
