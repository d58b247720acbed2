// Types for `cloudflare:test` / `cloudflare:workers` in the workerd tests.
declare namespace Cloudflare {
  interface Env extends import("../../edge/env").Env {}
  interface GlobalProps {
    mainModule: typeof import("../../edge/index");
  }
}
