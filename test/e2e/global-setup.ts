// One local Ceph RGW for the whole e2e run; test files that call startLocalS3() reuse it.
import { startLocalS3 } from "../../infra/local/s3";

export default async function setup() {
  const s3 = await startLocalS3();
  return () => s3.stop();
}
