// The deployment files agree with the decoder they deploy: the port it listens on by default,
// the health route it serves, the token its /metrics asks for, the user its image runs as, the
// file the build makes, and a stop timeout longer than its drain deadline (30 s by default), and
// a liveness probe that a drain's 503s on the health route cannot fail before that deadline. The
// systemd unit is checked by systemd's own parser.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../regional/config";
import { DEFAULT_DRAIN_TIMEOUT_MS } from "../../regional/runtime/drain";
import { DECODER } from "../../shared/protocol";

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), "utf8");
const DRAIN_DEADLINE_SECONDS = DEFAULT_DRAIN_TIMEOUT_MS / 1000;
const { port } = readConfig({ TESSERA_DECODER_SECRET: "s" });

describe("the Kubernetes Deployment", () => {
  const manifest = read("infra/kubernetes/decoder.yaml");

  it("probes the decoder's health route on the port it listens on", () => {
    expect(manifest.match(/httpGet: \{ path: (\S+), port: http \}/g)).toEqual([
      `httpGet: { path: ${DECODER.health}, port: http }`,
      `httpGet: { path: ${DECODER.health}, port: http }`,
    ]);
    expect(manifest).toContain(`- { name: http, containerPort: ${port} }`);
    expect(manifest).toContain(`value: "http://$(POD_IP):${port}"`);
  });

  it("runs as the image's user and lets the drain finish before killing", () => {
    expect(manifest).toContain("runAsUser: 10001");
    expect(read("infra/image/Containerfile")).toContain("useradd --uid 10001");
    const grace = Number(/terminationGracePeriodSeconds: (\d+)/.exec(manifest)?.[1]);
    expect(grace).toBeGreaterThan(DRAIN_DEADLINE_SECONDS);
    const liveness = /livenessProbe:\n([\s\S]*?)\n\s*(?:securityContext|readinessProbe|resources):/.exec(manifest)?.[1] ?? "";
    const period = Number(/periodSeconds: (\d+)/.exec(liveness)?.[1]);
    const failures = Number(/failureThreshold: (\d+)/.exec(liveness)?.[1]);
    expect(period * failures).toBeGreaterThanOrEqual(DRAIN_DEADLINE_SECONDS);
  });

  it("closes /metrics with a token from the secret its header says to create", () => {
    const key = /- name: TESSERA_METRICS_TOKEN\n\s+valueFrom: \{ secretKeyRef: \{ name: tessera-decoder, key: ([\w-]+) \} \}/.exec(manifest)?.[1];
    expect(key).toBeDefined();
    expect(manifest).toContain(`kubectl create secret generic tessera-decoder --from-literal=secret="$DECODER_SECRET"`);
    expect(manifest).toContain(`--from-literal=${key}=`);
  });

  it("limits memory to what it requests, the figure the decoder reports to the edge", () => {
    const requests = /requests: \{ cpu: "\d+", memory: (\w+) \}/.exec(manifest)?.[1];
    expect(manifest).toContain(`limits: { memory: ${requests} }`);
  });
});

describe("the image", () => {
  it("checks the health route on the port it listens on", () => {
    const containerfile = read("infra/image/Containerfile");
    expect(containerfile).toContain(`TESSERA_DECODER_PORT=${port}`);
    expect(containerfile).toContain(`EXPOSE ${port}`);
    expect(containerfile).toContain("${process.env.TESSERA_DECODER_PORT}" + DECODER.health);
  });
});

describe("the systemd unit", () => {
  const unit = read("infra/systemd/tessera-decoder.service");

  it("runs the built decoder and waits out its drain", () => {
    expect(unit).toMatch(/^ExecStart=\S+ --max-semi-space-size=8 \/opt\/tessera\/dist\/decoder\/main\.js$/m);
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(DRAIN_DEADLINE_SECONDS);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
  });

  it("is a unit systemd accepts", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "tessera-unit-"));
    try {
      // With a Node that exists here: systemd-analyze checks that the command does.
      const file = path.join(dir, "tessera-decoder.service");
      writeFileSync(file, unit.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`));
      const verify = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
      expect(verify.stderr).toBe("");
      expect(verify.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
