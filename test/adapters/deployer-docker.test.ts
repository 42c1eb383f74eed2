/**
 * The Docker deployer's parts that need no engine: which deploy strategy a service gets and why,
 * the container's port bindings and restart policy, and a logs answer read as text. Deploys
 * themselves run on the real engine in test/docker (deployer.docker.ts, deploy-strategies.docker.ts).
 */
import test from 'ava';
import type { DeployService, DeployTarget } from '../../core/ports/environments.ts';
import { describeStrategy, strategyFor } from '../../adapters/deployer/docker/strategy.ts';
import { containerSpec } from '../../adapters/deployer/docker/spec.ts';
import { demultiplexedText } from '../../adapters/docker/demux.ts';

const service = (over: Partial<DeployService> = {}): DeployService => ({
  image: null,
  command: null,
  ports: [],
  environment: {},
  healthcheck: null,
  deploy_strategy: null,
  ...over,
});

test('a published host port or host networking is replaced in place; otherwise the new container starts first; the manifest overrides both', (t) => {
  const fixed = service({
    ports: [
      { container: 8080, host: 18080, host_ip: '127.0.0.1' },
      { container: 9090, host: 19090, host_ip: null },
      { container: 7070, host: null, host_ip: null },
    ],
  });
  t.deepEqual(strategyFor('web', fixed, 'svcnet'), {
    strategy: 'replace',
    reason: 'it publishes host ports 127.0.0.1:18080, 19090, which one container holds at a time',
  });
  t.deepEqual(strategyFor('web', service({ ports: [{ container: 8080, host: null, host_ip: null }] }), 'host'), {
    strategy: 'replace',
    reason: "the deployer's network is host, so the old and the new container would share the host's ports",
  });
  const free = strategyFor('web', service({ ports: [{ container: 8080, host: null, host_ip: null }] }), null);
  t.is(free.strategy, 'start-first');
  t.is(
    describeStrategy('web', free),
    "web: deploy strategy start-first (the new container starts beside the old one, which is removed once the new one is healthy): it publishes no host port and the deployer's network is not host, so both can run at once",
  );
  t.deepEqual(strategyFor('web', { ...fixed, deploy_strategy: 'start-first' }, 'host'), {
    strategy: 'start-first',
    reason: 'services.web.deploy_strategy in the manifest',
  });
  t.is(strategyFor('api', service({ deploy_strategy: 'replace' }), null).strategy, 'replace');
});

test("a service's container publishes on the port's host address, and is not restarted until a deploy found it healthy", (t) => {
  const target: DeployTarget = {
    project: { id: 'prj_1', org_id: 'org_1', slug: 'shop' },
    environment: { id: 'env_1', name: 'staging', namespace: null },
    services: {
      web: service({
        ports: [
          { container: 8080, host: 18080, host_ip: '127.0.0.1' },
          { container: 9090, host: 19090, host_ip: null },
          { container: 7070, host: null, host_ip: null },
        ],
      }),
    },
    pullSecret: null,
  };
  const spec = containerSpec(target, 'web', 'sha256:abc', 'g1', null);
  t.deepEqual(spec.HostConfig?.PortBindings, {
    '8080/tcp': [{ HostPort: '18080', HostIp: '127.0.0.1' }],
    '9090/tcp': [{ HostPort: '19090' }],
  });
  t.deepEqual(Object.keys(spec.ExposedPorts ?? {}), ['8080/tcp', '9090/tcp', '7070/tcp']);
  t.deepEqual(spec.HostConfig?.RestartPolicy, { Name: 'no' });
});

test("a container's logs answer is read as text: frames of stdout and stderr in order, a partial last frame kept, an unframed answer as it is", (t) => {
  const frame = (stream: number, text: string) => {
    const payload = Buffer.from(text);
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  };
  const answer = Buffer.concat([frame(1, 'starting\n'), frame(2, 'bind: Address already in use\n'), frame(1, 'bye')]);
  t.is(demultiplexedText(answer), 'starting\nbind: Address already in use\nbye');
  t.is(demultiplexedText(answer.subarray(0, answer.length - 1)), 'starting\nbind: Address already in use\nby');
  t.is(demultiplexedText(Buffer.from('a tty said this\n')), 'a tty said this\n');
  t.is(demultiplexedText(Buffer.from('hi\n')), 'hi\n');
  t.is(demultiplexedText(Buffer.alloc(0)), '');
});
