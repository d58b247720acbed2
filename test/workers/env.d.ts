// Types for `cloudflare:test` / `cloudflare:workers` in the workerd tests.
type TesseraEnv = import("../../edge/env").Env;
type TesseraWorker = typeof import("../../edge/index");

declare namespace Cloudflare {
  interface Env extends TesseraEnv {}
  interface GlobalProps {
    mainModule: TesseraWorker;
  }
}
