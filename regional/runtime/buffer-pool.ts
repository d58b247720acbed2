// Buffers reused from one request to the next (a tile's JPEG, stored tiles read from a file),
// taken back once nothing reads them: once an answer is written, once a block is decoded. A
// buffer of its own each time is fresh memory: above glibc's mmap threshold it is mapped,
// faulted in page by page and unmapped, and V8 counts it as external memory to collect. A
// reused one is resident.

export class BufferPool {
  private readonly spare: Buffer[] = [];
  /** Buffers allocated (not taken from the spares), for the metrics. */
  allocated = 0;

  /**
   * @param maxSpare spares kept: one per request using one at once
   * @param maxBytes larger buffers are not kept
   */
  constructor(
    private readonly maxSpare: number,
    private readonly maxBytes: number,
  ) {}

  /** A buffer of at least `bytes` (contents undefined), to `giveBack` once nothing reads it. */
  take(bytes: number): Buffer {
    const i = this.spare.findIndex((b) => b.length >= bytes);
    if (i >= 0) return this.spare.splice(i, 1)[0];
    this.allocated++;
    return Buffer.allocUnsafeSlow(bytes);
  }

  giveBack(buffer: Buffer): void {
    if (buffer.length <= this.maxBytes && this.spare.length < this.maxSpare) this.spare.push(buffer);
  }
}
