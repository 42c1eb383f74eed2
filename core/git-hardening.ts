/**
 * What every git svc runs itself gets (the worker's, the repository cache's, the sandboxed one on a
 * checkout): configuration that outranks whatever a repository's own config says, and an
 * environment with nothing of the server's in it (docs/security.md, "The worker's git").
 */

/** Settings the repository's own config could otherwise set to run a command; the command line outranks it. */
export const GIT_HARDENING = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.untrackedCache=false',
  'core.pager=cat',
  'core.editor=true',
  'core.askPass=',
  'credential.helper=',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'gc.auto=0',
  'maintenance.auto=false',
  'protocol.ext.allow=never',
  'submodule.recurse=false',
].flatMap((c) => ['-c', c]);

/** The server's TLS trust settings (a private CA for its code host): configuration, never a credential, so they pass through. */
const TRUST_VARIABLES = ['GIT_SSL_CAINFO', 'GIT_SSL_CAPATH', 'SSL_CERT_FILE', 'SSL_CERT_DIR'];

/**
 * Nothing else of the server's environment: a search path, the C locale, no system or global
 * config, no prompts.
 */
export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  const trust = Object.fromEntries(TRUST_VARIABLES.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
  return {
    ...trust,
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C',
    LC_ALL: 'C',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    ...extra,
  };
}
