// Moved to shared/levels.ts so the edge's cost estimate picks the very level the decoder reads.
export * from "../../shared/levels";
