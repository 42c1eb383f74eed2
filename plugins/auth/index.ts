import { MailerToken } from '../../core/ports/mail.ts';
import type { Logger } from 'pino';
import { Tokens } from '../../core/tokens.ts';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Bootstrap } from './bootstrap.ts';
import { SshLogin } from './ssh-login.ts';
import { UserKeys } from './keys.ts';
import { Identity } from './mint.ts';
import { authRoutes } from './routes.ts';
import { nostrRoutes } from './nostr-routes.ts';
import { registerInvites } from './invites-routes.ts';
import { Users } from './users.ts';
import { Housekeeping } from '../../core/roles.ts';
import { UserDirectorySlotToken } from '../../core/ports/directory.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Bootstrap of the first admin, key-signature login, public keys, minting. */
export const plugin: DomainPlugin = {
  name: 'auth',
  register(server, { container }) {
    describeTags(server, {
      auth: "Sign-in and tokens: SSH-signature and Nostr logins, the first administrator's bootstrap, identity-provider exchange, minted tokens, the caller's own keys, org invites and access requests.",
    });
    // A server built without the kernel's adapters (the OpenAPI document alone) mails nothing.
    if (!container.isRegistered(MailerToken, true)) container.registerInstance(MailerToken, { name: 'none', send: async () => ({ sent: false }) });
    container.registerSingleton(Users);
    container.resolve(UserDirectorySlotToken).fill(container.resolve(Users));
    for (const cls of [UserKeys, Bootstrap, SshLogin, Identity]) container.registerSingleton(cls as never);
    const ssh = container.resolve(SshLogin);
    container.resolve(Housekeeping).add(() => ssh.expireChallenges());
    registerInvites(server, container);
    server.route(authRoutes(container));
    server.route(nostrRoutes(container));
    server.ext('onPostStart', async () => {
      const notice = await container.resolve(Bootstrap).startNotice();
      if (notice) container.resolve<Logger>(Tokens.Logger)[notice.level](notice.line);
    });
  },
};
