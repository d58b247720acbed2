// The repository's root, for the scripts under infra/ and the tests and benches that start them.
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
