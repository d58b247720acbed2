// The costliest expression the parser takes: as many nodes as the cap allows, every one a band or
// an operator (each a pass over the tile), so the length limit is no bound below it. Shared by
// the decoder's event-loop test, bench:hostile and bench:map-stages.
import { MAX_EXPRESSION_NODES } from "../../shared/maps/expression";

/** `b1+b2*b3-b1/…` over three bands, of exactly `nodes` nodes (an even count starts with a negation). */
export function expressionBomb(nodes = MAX_EXPRESSION_NODES): string {
  const ops = ["+", "*", "-", "/"];
  let text = nodes % 2 === 0 ? "-b1" : "b1";
  for (let i = 1; 2 * i + 1 <= nodes; i++) text += `${ops[i % 4]}b${(i % 3) + 1}`;
  return text;
}
