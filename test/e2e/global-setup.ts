// The decoder every stack of the run starts, built once for its sources' content, and one local
// Ceph RGW for the whole e2e run: test files that call startLocalS3() reuse it.
import { startLocalS3 } from "../../infra/local/s3";
import { useDecoderBuild } from "../support/decoder-build";

export default async function setup() {
  await useDecoderBuild();
  const s3 = await startLocalS3();
  return () => s3.stop();
}
