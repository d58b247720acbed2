/**
 * The command refuses its input: an invalid file, an unknown id or version. The tessera
 * command exits 1 with the message alone, no stack trace: the input is wrong, not the program.
 */
export class Refusal extends Error {
  override readonly name = "Refusal";
}
