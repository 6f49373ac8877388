// SMTP delivery through nodemailer, configured by PARLEY_SMTP_URL:
//   smtp://[user:password@]host[:port]   plain connection, upgraded with STARTTLS whenever the server
//                                         offers it (port 587 by default)
//   smtps://[user:password@]host[:port]  TLS from the first byte (port 465 by default)
// Query options: `requireTLS=true` (fail unless STARTTLS succeeds), `tls.rejectUnauthorized=false` (a
// relay with a self-signed certificate). Timeouts are short: a delivery runs while its outbox row is
// locked, and must end well within the transaction's 30 s.
import { createTransport } from 'nodemailer';

/** How long one delivery may take in all (connection, greeting, TLS, SMTP dialogue). */
export const DELIVERY_TIMEOUT_MS = 20_000;

export interface SmtpOptions {
  host: string;
  port: number;
  secure: boolean;
  requireTLS: boolean;
  auth?: { user: string; pass: string };
  tls: { rejectUnauthorized: boolean; servername?: string };
  connectionTimeout: number;
  greetingTimeout: number;
  socketTimeout: number;
}

export function smtpOptions(smtpUrl: string): SmtpOptions {
  const url = new URL(smtpUrl);
  const secure = url.protocol === 'smtps:';
  const options: SmtpOptions = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    requireTLS: false,
    tls: { rejectUnauthorized: true },
    connectionTimeout: 8_000,
    greetingTimeout: 8_000,
    socketTimeout: 15_000,
  };
  if (url.username || url.password) options.auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  for (const [key, value] of url.searchParams) {
    if (key === 'requireTLS') options.requireTLS = value === 'true';
    else if (key === 'tls.rejectUnauthorized') options.tls.rejectUnauthorized = value !== 'false';
    else throw new Error(`PARLEY_SMTP_URL: unknown option ${key} (known: requireTLS, tls.rejectUnauthorized)`);
  }
  return options;
}

export interface SmtpMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  replyTo?: string;
  messageId: string;
}

/**
 * Sends one message; resolves with the Message-ID once the server accepted it, rejects on any failure
 * (refused, unreachable, too slow). A connection per message: Parley sends little mail.
 */
export async function sendThroughSmtp(smtpUrl: string, message: SmtpMessage): Promise<string> {
  const transport = createTransport(smtpOptions(smtpUrl));
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`SMTP delivery took longer than ${DELIVERY_TIMEOUT_MS / 1000} s`)), DELIVERY_TIMEOUT_MS);
    });
    const info = await Promise.race([
      transport.sendMail({
        from: message.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        messageId: message.messageId,
        // Only the addresses above: nodemailer must not pick up anything else.
        disableFileAccess: true,
        disableUrlAccess: true,
      }),
      timeout,
    ]);
    return info.messageId ?? message.messageId;
  } finally {
    clearTimeout(timer);
    transport.close();
  }
}
