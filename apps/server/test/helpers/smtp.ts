// A real SMTP server on loopback (smtp-server), recording what it accepts, parsed with mailparser.
// It asks for authentication (user `parley`, password `p@ss word`: the URL must percent-encode it)
// and offers STARTTLS with smtp-server's built-in self-signed certificate.
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';

export interface ReceivedEmail {
  session: SMTPServerSession;
  raw: string;
  mail: ParsedMail;
}

export interface TestSmtpServer {
  port: number;
  received: ReceivedEmail[];
  /** PARLEY_SMTP_URL for this server (the self-signed certificate accepted). */
  url(scheme?: 'smtp' | 'smtps'): string;
  /** The first e-mail accepted for `to` (waits for it). */
  waitForEmailTo(to: string, options?: { subject?: RegExp; timeoutMs?: number }): Promise<ParsedMail>;
  close(): Promise<void>;
}

export async function startSmtp(options: Partial<SMTPServerOptions> & { refuseFirst?: (to: string) => boolean } = {}): Promise<TestSmtpServer> {
  const received: ReceivedEmail[] = [];
  const refused = new Set<string>();
  const { refuseFirst, ...serverOptions } = options;
  const server = new SMTPServer({
    logger: false,
    authOptional: false,
    onAuth(auth, _session, callback) {
      if (auth.username === 'parley' && auth.password === 'p@ss word') return callback(null, { user: 'parley' });
      callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const to = session.envelope.rcptTo.map((r) => r.address).join(',');
        if (refuseFirst?.(to) && !refused.has(to)) {
          refused.add(to);
          return callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: 451 }));
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        received.push({ session: structuredClone({ ...session, envelope: session.envelope, secure: session.secure, user: session.user }) as SMTPServerSession, raw, mail: await simpleParser(raw) });
        callback(null);
      });
    },
    ...serverOptions,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    received,
    url: (scheme = 'smtp') => `${scheme}://parley:p%40ss%20word@127.0.0.1:${port}/?tls.rejectUnauthorized=false`,
    async waitForEmailTo(to, { subject, timeoutMs = 40_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = received.find((r) => r.session.envelope.rcptTo.some((a) => a.address === to) && (!subject || subject.test(r.mail.subject ?? '')));
        if (hit) return hit.mail;
        if (Date.now() > deadline) throw new Error(`timed out waiting for an e-mail to ${to}${subject ? ` matching ${subject}` : ''}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
