// Decoded pixels as the decoder passes them around: interleaved 8-bit samples, 1 (gray),
// 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels; and windows of decoded blocks of any sample
// type, as map reads take them.

export interface Pixels {
  /** `width` × `height` × `channels` samples. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

/**
 * A window as read: when it lies inside one decoded block, `data` is that whole (cached) block
 * and the window is `crop` of it, so fast paths can use it in place; otherwise `crop` is all of
 * `data`. `data` holds `width` × `height` × `channels` samples of `sampleBytes` bytes each, in
 * the file's (little-endian) byte order.
 */
export interface BlockView {
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
  sampleBytes: number;
  crop: { left: number; top: number; width: number; height: number };
  /**
   * When `data` is a cached block's: the reader is done with it (its memory may be reused once
   * the block is evicted). Every reader calls it once done: a view never released keeps its
   * block's memory out of reuse for good.
   */
  release?: () => void;
}

/** A window of 8-bit pixels as read. */
export interface PixelView extends BlockView, Pixels {
  channels: 1 | 2 | 3 | 4;
}

/** The window of `view` as compact pixels (its rows copied out unless it is all of `data`). */
export function compactWindow(view: PixelView): Pixels {
  const { data, width, channels, crop } = view;
  if (crop.left === 0 && crop.top === 0 && crop.width === width && crop.height === view.height) {
    return { data, width, height: view.height, channels };
  }
  return copyWindow(view);
}

/** The window of `view` copied out into memory of its own. */
export function copyWindow(view: PixelView): Pixels {
  const { data, width, channels, crop } = view;
  const row = crop.width * channels;
  const out = new Uint8Array(row * crop.height);
  for (let y = 0; y < crop.height; y++) {
    const from = ((crop.top + y) * width + crop.left) * channels;
    out.set(data.subarray(from, from + row), y * row);
  }
  return { data: out, width: crop.width, height: crop.height, channels };
}
