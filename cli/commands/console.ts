/** `svc console`: the web console in a browser, already signed in through a one-time login link. */
import { spawn } from 'node:child_process';
import { parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { api } from '../http.ts';
import { printJson } from '../output.ts';

export const CONSOLE_USAGE = `usage: svc console [--print]

Opens the web console in your browser, signed in as you. The link it opens works once, within a
minute, and carries no token: the console turns it into a session cookie of its own.
  --print   print only the link on stdout instead of opening a browser (open it within a minute)

Examples:
  svc console --print
  svc console --profile work     (signed in as that profile's user, at its API URL)`;

/** The platform's "open this URL" command; false when there is none or it fails to start. */
function openBrowser(url: string): Promise<boolean> {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

export async function runConsole(ctx: Context, args: string[]): Promise<number> {
  const { values } = parseCommand(args, { print: { type: 'boolean' } }, CONSOLE_USAGE, { min: 0, max: 0 });
  const link = await api(ctx).POST('/auth/console/links', { body: {} });
  if (ctx.json) {
    printJson(link);
    return 0;
  }
  const headless = process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY;
  if (!values.print && !headless && (await openBrowser(link.url))) {
    process.stdout.write(`Opened the console in your browser (the link works once, until ${link.expires_at}).\n`);
    return 0;
  }
  // Only the link on stdout, so `open "$(svc console --print)"` works; the advice goes to stderr.
  process.stderr.write('Open this link within a minute (it works once):\n');
  process.stdout.write(`${link.url}\n`);
  return 0;
}
