// The deployable artifacts' tests: one build of the decoder into dist/decoder, as `npm run
// build:decoder` makes it for the image, the service units and a production install, and the one
// the decoders these tests start run from.
import { buildDecoder, DECODER_DIST } from "../../infra/build/decoder";

export default async function setup() {
  await buildDecoder();
  process.env.TESSERA_DECODER_BUILD = DECODER_DIST;
}
