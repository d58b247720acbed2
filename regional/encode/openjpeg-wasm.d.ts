// Types of the OpenJPEG WebAssembly build's encoder, as far as this decoder uses it (the package
// ships none): an Emscripten module factory whose J2KEncoder is an embind class.
declare module "@cornerstonejs/codec-openjpeg/wasmjs" {
  export interface FrameInfo {
    width: number;
    height: number;
    bitsPerSample: number;
    componentCount: number;
    isSigned: boolean;
  }
  export interface J2KEncoder {
    /** The input buffer inside WebAssembly memory, sized for `frame`: interleaved samples go here. */
    getDecodedBuffer(frame: FrameInfo): Uint8Array;
    /** The codestream inside WebAssembly memory, valid until the next call on the encoder. */
    getEncodedBuffer(): Uint8Array;
    /**
     * Where the image starts on its reference grid, whose far edge is the frame's width and
     * height (the SIZ marker's XOsiz, YOsiz): samples are still read from the buffer's start.
     */
    setImageOffset(offset: { x: number; y: number }): void;
    setDecompositions(decompositions: number): void;
    /** Reversible 5/3 (lossless) or irreversible 9/7, with that many quality layers. */
    setQuality(lossless: boolean, layers: number): void;
    /** The compression ratio a layer aims at (20 = a twentieth of the raw size). */
    setCompressionRatio(layer: number, ratio: number): void;
    encode(): void;
    /** Frees the encoder's WebAssembly memory (embind objects are not garbage-collected). */
    delete(): void;
  }
  export interface OpenJpegModule {
    J2KEncoder: new () => J2KEncoder;
    /** The module's WebAssembly memory, as bytes: its length is the memory's size. */
    HEAPU8: Uint8Array;
  }
  /** `print`: where OpenJPEG's messages go (its errors and warnings are written to stdout). */
  const factory: (options?: { print?: (text: string) => void; printErr?: (text: string) => void }) => Promise<OpenJpegModule>;
  export default factory;
}
