// The e-mail gateway's SMTP listener (smtp-server), started with the server when
// PARLEY_EMAIL_GATEWAY_PORT is set: a mail server (Postfix, an MX) delivers mail for the gateway's
// domain here. Each recipient is checked at RCPT TO (unknown addresses, bad tokens, archived
// channels, lost rights and the organization's mail rate are refused with 550, as Zulip's gateway
// does); the mail is parsed (mailparser) and posted once it has arrived, and the DATA answer says
// whether it was: 250 with the message id, 552 when it is over the size limit, 550 when it cannot be
// posted, 451 (try again) on a server fault. Mail to postmaster is accepted and logged.
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { simpleParser } from 'mailparser';
import type { AppDeps } from '../deps.ts';
import { createRateLimiter, type RateLimiter } from '../data/rate-limits.repo.ts';
import { checkGatewayRecipient, doDeliverGatewayMail, GatewayRefusal, type GatewayMail } from '../actions/email-gateway.ts';
import { gatewayLocalPart } from './address.ts';

export interface EmailGateway {
  /** The port it listens on (the configured one, or the one picked for port 0). */
  port: number;
  /** Stops accepting connections, ends the open ones, and writes the rate limits' counts. */
  close(): Promise<void>;
}

/** Zulip's RATE_LIMITING_MIRROR_REALM_RULES: mails per organization, per window of seconds. */
const MIRROR_REALM_RULES = [
  { durationSeconds: 60, points: 50 },
  { durationSeconds: 300, points: 120 },
  { durationSeconds: 3600, points: 600 },
];

const refusal = (responseCode: number, text: string) => Object.assign(new Error(text), { responseCode });

function isPostmaster(address: string, domain: string): boolean {
  if (address.toLowerCase() === 'postmaster') return true;
  try {
    return gatewayLocalPart(address, domain).toLowerCase() === 'postmaster';
  } catch {
    return false;
  }
}

/**
 * The From header as Zulip shows it (Python's str() of the parsed header): `Name <address>`, the name
 * quoted only when it holds one of the address specials.
 */
function fromHeader(addresses: { name: string; address?: string | undefined }[]): string {
  return addresses
    .map(({ name, address }) => {
      const display = /[()<>@,:;."[\]\\]/.test(name) ? `"${name.replace(/(["\\])/g, '\\$1')}"` : name;
      if (!address) return display;
      return display ? `${display} <${address}>` : address;
    })
    .join(', ');
}

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startEmailGateway(deps: AppDeps): Promise<EmailGateway> {
  const config = deps.config.emailGateway;
  if (config.port === null) throw new Error('the e-mail gateway has no port (PARLEY_EMAIL_GATEWAY_PORT)');
  const logger = deps.logger;
  const limiters: RateLimiter[] = MIRROR_REALM_RULES.map((rule) =>
    createRateLimiter(deps.db, rule, `email-gateway-${rule.durationSeconds}`, (error) => logger.error({ err: error }, 'email gateway: rate-limit write failed')),
  );
  // Every rule counts the mail; any one over its budget refuses it.
  const admit = (realmId: number) => limiters.map((limiter) => limiter.consume(`realm:${realmId}`).allowed).every(Boolean);

  const server = new SMTPServer({
    name: config.domain,
    banner: 'Parley e-mail gateway',
    size: config.maxMessageBytes,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    hideSTARTTLS: true,
    disableReverseLookup: true,
    // A stopping server gives open SMTP sessions this long (ms) to finish before ending them.
    closeTimeout: 5000,
    logger: false,
    async onRcptTo(address, _session, callback) {
      if (isPostmaster(address.address, config.domain)) return callback();
      try {
        await checkGatewayRecipient(deps, address.address, admit);
        callback();
      } catch (error) {
        if (error instanceof GatewayRefusal) return callback(refusal(error.responseCode, error.message));
        logger.error({ err: error }, 'email gateway: checking a recipient failed');
        callback(refusal(451, '4.3.0 Temporary server error, try again later'));
      }
    },
    onData(stream, session, callback) {
      deliver(stream, session).then(
        (answer) => callback(null, answer),
        (error: unknown) => {
          if (error instanceof GatewayRefusal) return callback(refusal(error.responseCode, error.message));
          logger.error({ err: error }, 'email gateway: posting a mail failed');
          callback(refusal(451, '4.3.0 Temporary server error, try again later'));
        },
      );
    },
  });

  server.on('error', (error) => logger.error({ err: error }, 'email gateway: SMTP connection error'));

  async function deliver(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const raw = await readAll(stream);
    if (stream.sizeExceeded) throw new GatewayRefusal(552, `5.3.4 Message size exceeds fixed maximum message size (${config.maxMessageBytes} bytes)`);
    const parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, keepCidLinks: true, checksumAlgo: false });
    const mail: GatewayMail = {
      subject: parsed.subject,
      from: fromHeader(parsed.from?.value ?? []),
      text: parsed.text,
      html: parsed.html,
      attachments: parsed.attachments,
      messageId: parsed.messageId,
      raw,
    };
    const posted: number[] = [];
    for (const rcpt of session.envelope.rcptTo) {
      if (isPostmaster(rcpt.address, config.domain)) {
        logger.warn({ subject: parsed.subject ?? '' }, 'email gateway: mail to postmaster (not forwarded)');
        continue;
      }
      // The authoritative check, now that the mail is here (rights may have changed since RCPT TO).
      const recipient = await checkGatewayRecipient(deps, rcpt.address);
      const { messageId, duplicate } = await doDeliverGatewayMail(deps, recipient, mail);
      logger.info({ realmId: recipient.realm.id, channelId: recipient.channel.id, messageId, duplicate }, 'email gateway: mail posted');
      posted.push(messageId);
    }
    return posted.length > 0 ? `OK: posted as message ${posted.join(', ')}` : 'OK';
  }

  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(new Error(`the e-mail gateway cannot listen on ${config.host}:${config.port} (${error.code ?? error.message}); set PARLEY_EMAIL_GATEWAY_PORT to a free port`, { cause: error }));
    server.server.once('error', failed);
    server.listen(config.port!, config.host, () => {
      server.server.off('error', failed);
      resolve();
    });
  });
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(limiters.map((limiter) => limiter.close()));
    },
  };
}
