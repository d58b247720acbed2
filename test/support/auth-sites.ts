// The two other sites of an Authorization Flow 2.0 test: the viewer's (auth-client.html, a worked
// client of the flow, with OpenSeadragon) and the operator's login, a page with one button that
// sends the user back to the edge's login return with an assertion signed by AUTH_LOGIN_KEY, as
// the login of a deployment would (edge/handlers/auth.ts says what it must hold). Each listens on
// 127.0.0.1 with a port of its own and is addressed as http://localhost:port: another site than
// an edge on http://127.0.0.1, so the edge's cookies are third-party to the viewer, as they are
// in a deployment.
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { SignJWT } from "jose";

export interface Site {
  /** http://localhost:port/ */
  url: string;
  origin: string;
  close(): Promise<void>;
}

const OPENSEADRAGON = join(dirname(createRequire(import.meta.url).resolve("openseadragon")), "openseadragon.min.js");

/** The viewer site: the client page at / (its edge filled in), and OpenSeadragon's script. */
export async function startAuthClient(edgeUrl: string): Promise<Site> {
  const page = (await readFile(new URL("auth-client.html", import.meta.url), "utf8")).replace("%EDGE_URL%", edgeUrl.replace(/[&"<]/g, ""));
  const script = await readFile(OPENSEADRAGON);
  return listen((req, res) => {
    const path = new URL(req.url ?? "/", "http://site").pathname;
    if (req.method === "GET" && path === "/") res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(page);
    else if (req.method === "GET" && path === "/openseadragon/openseadragon.min.js") res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(script);
    else res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
}

export interface LoginSite extends Site {
  /** The edge whose login return this login sends users back to (and no other). */
  edgeUrl?: string;
  /** Every login page served, with the parameters the edge sent the user with. */
  requests: { returnTo: string; state: string; origin: string }[];
}

export interface LoginOptions {
  /** AUTH_LOGIN_KEY, which signs the assertion (HS256). */
  key: string;
  /** The subject and the source-id patterns the assertion grants. */
  sub: string;
  see: string[];
}

/**
 * The operator's login at /login. It answers the edge's redirect (return_to, state, origin) with a
 * page whose one button posts the signed assertion, for that state, to return_to: the user's click
 * is what carries the credential back, as with a real login's form.
 */
export async function startLogin(options: LoginOptions): Promise<LoginSite> {
  const requests: LoginSite["requests"] = [];
  const site: LoginSite = {
    ...(await listen(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://site");
      const returnTo = url.searchParams.get("return_to") ?? "";
      const state = url.searchParams.get("state") ?? "";
      // A login sends users back to the edge it serves, never to an address a request names.
      if (req.method !== "GET" || url.pathname !== "/login" || !site.edgeUrl || returnTo !== `${site.edgeUrl}/auth/active/return` || state === "") {
        res.writeHead(400, { "content-type": "text/plain" }).end("not a login this site serves\n");
        return;
      }
      requests.push({ returnTo, state, origin: url.searchParams.get("origin") ?? "" });
      const assertion = await new SignJWT({ sub: options.sub, see: options.see, state })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setAudience("tessera-login")
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(options.key));
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test login</title><link rel="icon" href="data:,"></head>
<body><form method="post" action="${escape(returnTo)}">
<input type="hidden" name="assertion" value="${escape(assertion)}">
<button id="approve">Log in as ${escape(options.sub)}</button>
</form></body></html>
`);
    })),
    requests,
  };
  return site;
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<Site> {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch((err) => res.writeHead(500, { "content-type": "text/plain" }).end(`${err}\n`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  const origin = `http://localhost:${port}`;
  return { url: `${origin}/`, origin, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}
