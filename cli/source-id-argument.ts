// A command's source id, held to the rule the decoder serves by before any store or edge is
// asked: an id such as "../../x" would otherwise name a key outside the sources' prefix, and
// "shared/cogs/member" one a mosaic's document may use.
import { InvalidArgumentError } from "commander";
import { isValidSourceId, SOURCE_ID_RULE } from "../shared/source-id";

/** Commander's parser for an `<id>` argument or an `--id` option. */
export function sourceIdArgument(id: string): string {
  if (!isValidSourceId(id)) throw new InvalidArgumentError(SOURCE_ID_RULE);
  return id;
}
