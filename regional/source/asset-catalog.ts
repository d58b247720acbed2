// Mosaic members as a catalog, so the members' cache opens them as it opens sources: an asset
// (store key or URL) through the access policy, at its current snapshot. A member that is missing,
// or no longer at the version a tile pinned, is the mosaic's fault, not an unknown source: 502
// (the log naming the asset), never a 404 the edge would remember as "no such source".
import { badGateway, HttpError } from "../../shared/errors";
import { assetLabel, type AssetSources } from "./assets";
import type { Source, SourceCatalog } from "./source";

export function assetCatalog(assets: AssetSources): SourceCatalog {
  const open = async (asset: string, version?: string, signal?: AbortSignal): Promise<Source> => {
    const source = await assets.open(asset, signal).catch((e: unknown) => {
      throw e instanceof HttpError && e.status === 404 ? badGateway("a mosaic asset does not exist", `mosaic asset ${assetLabel(asset)} does not exist`) : e;
    });
    if (version !== undefined && source.version !== version) {
      await source.close();
      throw badGateway(`a mosaic asset is no longer at version ${version}`, `mosaic asset ${assetLabel(asset)} is no longer at version ${version}`);
    }
    return source;
  };
  return { description: "mosaic assets", open, openKey: (key, signal) => open(key, undefined, signal) };
}
