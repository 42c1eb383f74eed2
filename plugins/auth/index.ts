import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Bootstrap } from './bootstrap.ts';
import { SshLogin } from './ssh-login.ts';
import { UserKeys } from './keys.ts';
import { Identity } from './mint.ts';
import { authRoutes } from './routes.ts';
import { nostrRoutes } from './nostr-routes.ts';
import { registerInvites } from './invites-routes.ts';
import { Users } from './users.ts';
import { UserDirectoryToken } from '../../core/ports/directory.ts';

/** Bootstrap of the first admin, key-signature login, public keys, minting. */
export const plugin: DomainPlugin = {
  name: 'auth',
  register(server, { container }) {
    container.registerSingleton(Users);
    container.register(UserDirectoryToken, { useToken: Users });
    for (const cls of [UserKeys, Bootstrap, SshLogin, Identity]) container.registerSingleton(cls as never);
    registerInvites(server, container);
    server.route(authRoutes(container));
    server.route(nostrRoutes(container));
  },
};
