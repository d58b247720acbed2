// The Authorization Flow 2.0 services as an info.json declares them: the probe, inside it the
// access service of the source's profile, inside that its token service (and for a login, the
// logout service). The routes that answer them are in edge/handlers/auth.ts and probe.ts.
import type { AccessProfile, Restriction } from "../../shared/access";
import type { ApiVersion } from "../../shared/iiif/image-request";
import type { AccessConfig } from "./config";

export const AUTH_CONTEXT = "http://iiif.io/api/auth/2/context.json";

/** Where each service of this edge answers, under its public base. */
export const AUTH_PATHS = {
  access: (profile: "active" | "kiosk") => `/auth/${profile}`,
  loginReturn: "/auth/active/return",
  token: (profile: AccessProfile) => `/auth/${profile}/token`,
  logout: "/auth/logout",
} as const;

const en = (text: string) => ({ en: [text] });

/** The probe of a restricted image service (`serviceId`), as its info.json declares it. */
export function probeService(serviceId: string, base: string, restriction: Restriction, access: AccessConfig) {
  return {
    id: `${serviceId}/probe`,
    type: "AuthProbeService2",
    service: [accessService(base, restriction.profile, access)],
    ...deniedText(restriction, access),
  };
}

function accessService(base: string, profile: AccessProfile, access: AccessConfig) {
  const token = {
    id: `${base}${AUTH_PATHS.token(profile)}`,
    type: "AuthAccessTokenService2",
    errorHeading: en("Access could not be checked"),
    errorNote: en(`Reload the page, or try again later. If it persists, ${access.institution} can help.`),
  };
  const type = "AuthAccessService2";
  switch (profile) {
    case "active":
      return {
        id: `${base}${AUTH_PATHS.access("active")}`,
        type,
        profile,
        label: en(`Log in to ${access.institution}`),
        heading: en("Please log in"),
        note: en(`${access.institution} shows this image in full to users who have logged in.`),
        confirmLabel: en("Log in"),
        service: [token, { id: `${base}${AUTH_PATHS.logout}`, type: "AuthLogoutService2", label: en(`Log out of ${access.institution}`) }],
      };
    case "kiosk":
      return { id: `${base}${AUTH_PATHS.access("kiosk")}`, type, profile, service: [token] };
    case "external":
      return { type, profile, label: en(`Access through ${access.institution}`), service: [token] };
  }
}

/** What a client shows a user who may not see the image whole. */
export function deniedText(restriction: Restriction, access: AccessConfig) {
  const where = {
    active: `Log in to ${access.institution} to see it in full.`,
    kiosk: `It can be seen in full on the reading-room machines of ${access.institution}.`,
    external: `It can be seen in full from ${access.institution}'s own network.`,
  }[restriction.profile];
  const degraded = restriction.degradedWidth === undefined ? "" : ` Anyone may see it ${restriction.degradedWidth} pixels wide.`;
  return { errorHeading: en("This image is restricted"), errorNote: en(`${where}${degraded}`) };
}

/**
 * The probe inside an info.json: in 3.0 its `service`, with the auth context before the image
 * context; in 2.1 a service with its own context, as 2.1 services are.
 */
export function declaringProbe<T extends Record<string, unknown>>(doc: T, version: ApiVersion, probe: ReturnType<typeof probeService>): T {
  if (version === 3) return { ...doc, "@context": [AUTH_CONTEXT, doc["@context"]], service: [probe] };
  return { ...doc, service: [{ "@context": AUTH_CONTEXT, ...probe }] };
}
