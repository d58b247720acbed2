// The small HTML pages of the Authorization Flow: the token service's page, which posts one
// message to the viewer that framed it, and the pages a login or logout window ends on. Nothing
// a client sent is ever written into them as markup: the message is JSON made safe for a
// script, and the only script a page may run is the one whose digest its policy names.

/** JSON that cannot end its <script> element or a line of it, whatever its strings hold. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

const HTML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c]);

async function sha256Base64(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return btoa(String.fromCharCode(...digest));
}

interface Page {
  title: string;
  /** Plain text, escaped here. */
  text: string;
  /** The page's one script, if any. */
  script?: string;
  /** Who may frame it: the token page's viewer origin; no one else. */
  frameAncestor?: string;
  status?: number;
  setCookies?: string[];
}

/** A page that nothing caches, that runs only its own script, and that no other origin may frame unless named. */
export async function page({ title, text, script, frameAncestor, status = 200, setCookies = [] }: Page): Promise<Response> {
  const scriptPolicy = script ? `'sha256-${await sha256Base64(script)}'` : "'none'";
  const headers = new Headers({
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": `default-src 'none'; script-src ${scriptPolicy}; frame-ancestors ${frameAncestor ?? "'none'"}; base-uri 'none'; form-action 'none'`,
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
  });
  for (const c of setCookies) headers.append("set-cookie", c);
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>
<body><p>${escapeHtml(text)}</p>${script ? `<script>${script}</script>` : ""}</body></html>
`;
  return new Response(body, { status, headers });
}

/** The script that posts `message` to the page at `origin` that framed this one, and to no other. */
export const postMessageScript = (message: unknown, origin: string) => `window.parent.postMessage(${scriptJson(message)}, ${scriptJson(origin)});`;

/** The script that ends an access or logout window, so the viewer that opened it goes on. */
export const CLOSE_WINDOW_SCRIPT = "window.close();";
