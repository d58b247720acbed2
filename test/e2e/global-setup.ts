// One build of the decoder (dist/decoder) for the tests that run it as deployed, and one local
// Ceph RGW for the whole e2e run; test files that call startLocalS3() reuse it.
import { buildDecoder } from "../../infra/build/decoder";
import { startLocalS3 } from "../../infra/local/s3";

export default async function setup() {
  await buildDecoder();
  const s3 = await startLocalS3();
  return () => s3.stop();
}
