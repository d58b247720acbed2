// TEMPORARY stand-in until the access policy lands.
import type { Source } from "./source";
export function assetLabel(asset: string): string {
  return asset;
}
export class AssetSources {
  constructor(private readonly openStoreKey: (key: string, signal?: AbortSignal) => Promise<Source>) {}
  open(asset: string, signal?: AbortSignal): Promise<Source> {
    return this.openStoreKey(asset, signal);
  }
  async close(): Promise<void> {}
}
