// The decoders the edge runs as Cloudflare Containers: how many, on which instance type, for
// which region, and the environment each container's decoder starts with. The instance type is
// the [[containers]] instance_type of wrangler.toml, repeated as a variable because a Worker
// cannot read its own deployment's configuration (a test keeps the two equal).
//
//   DECODER_CONTAINER_COUNT     containers kept running, decoder-0 … decoder-{N-1}; 0 = none (≤ max_instances)
//   DECODER_CONTAINER_INSTANCE  their instance type: basic, standard-1 … standard-4
//   DECODER_CONTAINER_REGION    the region (one of REGIONS) they serve; empty = DEFAULT_REGION
import { badConfig, intVar } from "../../shared/config";
import { REGION_NAME } from "../../shared/regions";

export interface ContainerVars {
  DECODER_CONTAINER_COUNT?: string;
  DECODER_CONTAINER_INSTANCE?: string;
  DECODER_CONTAINER_REGION?: string;
}

const MIB = 1024 * 1024;

/** Cloudflare's predefined instance types: vCPU and memory (MiB). */
const INSTANCE_TYPES: Record<string, { vcpu: number; memoryMiB: number }> = {
  lite: { vcpu: 1 / 16, memoryMiB: 256 },
  basic: { vcpu: 1 / 4, memoryMiB: 1024 },
  "standard-1": { vcpu: 1 / 2, memoryMiB: 4096 },
  "standard-2": { vcpu: 1, memoryMiB: 6144 },
  "standard-3": { vcpu: 2, memoryMiB: 8192 },
  "standard-4": { vcpu: 4, memoryMiB: 12288 },
};

/** Node, libvips and one full tile's work do not fit in less. */
const DECODER_MIN_MIB = 1024;

export interface ContainerSettings {
  count: number;
  instanceType: string;
  /** Decodes it runs well at once: its whole vCPUs, at least one. */
  capacity: number;
  memoryBytes: number;
  region?: string;
}

/** The containers' settings; undefined when the deployment runs none. A bad value is named. */
export function containerSettings(vars: ContainerVars): ContainerSettings | undefined {
  const count = intVar(vars, "DECODER_CONTAINER_COUNT", { max: 1000, fallback: 0 });
  if (count === 0) return undefined;
  const instanceType = (vars.DECODER_CONTAINER_INSTANCE ?? "").trim();
  const instance = INSTANCE_TYPES[instanceType];
  if (!instance) throw badConfig("DECODER_CONTAINER_INSTANCE", `must be one of ${Object.keys(INSTANCE_TYPES).join(", ")} (the [[containers]] instance_type), got ${JSON.stringify(instanceType)}`);
  if (instance.memoryMiB < DECODER_MIN_MIB) throw badConfig("DECODER_CONTAINER_INSTANCE", `${instanceType} has ${instance.memoryMiB} MiB; a decoder needs at least ${DECODER_MIN_MIB}`);
  const region = (vars.DECODER_CONTAINER_REGION ?? "").trim() || undefined;
  if (region !== undefined && !REGION_NAME.test(region)) throw badConfig("DECODER_CONTAINER_REGION", `must be a region name of a-z, 0-9 and "-", got ${JSON.stringify(region)}`);
  return { count, instanceType, capacity: Math.max(1, Math.floor(instance.vcpu)), memoryBytes: instance.memoryMiB * MIB, region };
}

/** The container of index `i`: its DO's name, and the decoder's name in the admission DOs. */
export const containerName = (i: number) => `decoder-${i}`;

/** Variables passed through to the decoder as they are: its own (TESSERA_…) and the S3 SDK's (AWS_…). */
const PASSED_THROUGH = /^(TESSERA|AWS)_[A-Z0-9_]+$/;

/**
 * The decoder's environment in its container: the operator's TESSERA_… and AWS_… variables and
 * secrets (the store, its credentials, the decoder's tuning), the shared secret, and its
 * capacity and memory from the instance type, with its budgets sized to that memory unless the
 * operator set them.
 */
export function containerEnv(vars: object, secret: string, settings: ContainerSettings): Record<string, string> {
  const passed = Object.entries(vars).filter(([name, value]) => PASSED_THROUGH.test(name) && typeof value === "string");
  const memoryMiB = settings.memoryBytes / MIB;
  return {
    // The decoder's defaults (512 and 256 MiB) are for a machine of its own; a container's are a share of its memory.
    TESSERA_WORK_BUDGET_MB: String(Math.min(512, memoryMiB / 4)),
    TESSERA_BLOCK_CACHE_MB: String(Math.min(256, memoryMiB / 8)),
    ...Object.fromEntries(passed),
    TESSERA_DECODER_SECRET: secret,
    TESSERA_DECODER_CAPACITY: String(settings.capacity),
    TESSERA_DECODER_MEMORY_LIMIT: String(settings.memoryBytes),
    UV_THREADPOOL_SIZE: String(settings.capacity),
  };
}
