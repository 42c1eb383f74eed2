import { createServer, type Server, type Socket } from 'node:net';

/** A mail as the sink received it. */
export interface Received {
  from: string;
  to: string[];
  data: string;
  auth: string | null;
}

/** A small SMTP server: EHLO, AUTH PLAIN, MAIL, RCPT, DATA, QUIT; `refuseRcpt` answers 550 to recipients. */
export function smtpSink() {
  const received: Received[] = [];
  const state = { refuseRcpt: false };
  const server: Server = createServer((socket: Socket) => {
    let current: Received = { from: '', to: [], data: '', auth: null };
    let inData = false;
    let buffer = '';
    const say = (line: string) => socket.write(`${line}\r\n`);
    say('220 sink.test ESMTP ready');
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 5);
          inData = false;
          received.push(current);
          current = { from: '', to: [], data: '', auth: current.auth };
          say('250 2.0.0 queued');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') socket.write('250-sink.test\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n');
        else if (verb === 'AUTH') ((current.auth = Buffer.from(line.split(' ')[2], 'base64').toString()), say('235 2.7.0 ok'));
        else if (verb === 'MAIL') ((current.from = /<(.*)>/.exec(line)![1]), say('250 ok'));
        else if (verb === 'RCPT') state.refuseRcpt ? say('550 5.1.1 no such user') : (current.to.push(/<(.*)>/.exec(line)![1]), say('250 ok'));
        else if (verb === 'DATA') ((inData = true), say('354 go ahead'));
        else if (verb === 'QUIT') (say('221 bye'), socket.end());
        else say('502 not implemented');
      }
    });
  });
  return {
    received,
    state,
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
