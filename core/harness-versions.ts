/**
 * The version of a CLI as it reports it (`codex --version` → "codex-cli 0.171.0"), and how it
 * compares with the versions a harness was tested with. Pure: the harnesses plugin runs the command
 * (harnesses never spawn) and caches the answer per binary.
 */
import type { HarnessVersions } from './ports/harness.ts';

export type Version = [number, number, number];

/** The first x.y.z in the text (a leading v allowed), or null. */
export function parseVersion(text: string): Version | null {
  const m = /(?:^|[^\d.])v?(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

export function compareVersions(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

export const formatVersion = (v: Version) => v.join('.');

/**
 * What the auth status says about the installed version: nothing when it is unknown (the CLI did
 * not answer); the version when it is within the tested range; else that it is older or newer than svc knows.
 */
export function versionNote(output: string | null, versions: HarnessVersions): string | null {
  const found = output === null ? null : parseVersion(output);
  const oldest = parseVersion(versions.oldest);
  const newest = parseVersion(versions.newest);
  if (!found || !oldest || !newest) return null;
  if (compareVersions(found, oldest) < 0)
    return `version ${formatVersion(found)} is older than svc's invocation is known to work with (tested ${versions.oldest} to ${versions.newest})`;
  if (compareVersions(found, newest) > 0)
    return `version ${formatVersion(found)} is newer than svc was tested with (${versions.oldest} to ${versions.newest}); its flags or stream may have changed`;
  return `version ${formatVersion(found)}, as tested`;
}
