// Mosaic members as a catalog, so the members' cache opens them as it opens sources: an asset
// (store key or URL) through the access policy, at its current snapshot; asked for a version it
// no longer has, version_gone, as any source.
import { versionGone } from "../../shared/errors";
import { assetLabel, type AssetSources } from "./assets";
import type { Source, SourceCatalog } from "./source";

export function assetCatalog(assets: AssetSources): SourceCatalog {
  return {
    description: "mosaic assets",
    async open(asset, version, signal) {
      const source = await assets.open(asset, signal);
      if (version !== undefined && source.version !== version) {
        await source.close();
        throw versionGone(`asset ${assetLabel(asset)} version ${version} is no longer available`);
      }
      return source;
    },
    openKey: (key, signal): Promise<Source> => assets.open(key, signal),
  };
}
