// Configuration of the incoming e-mail gateway (PARLEY_EMAIL_GATEWAY_*), read by config.ts.

export interface EmailGatewayConfig {
  /** SMTP port to listen on (PARLEY_EMAIL_GATEWAY_PORT); null: no listener (the default). 0 picks a free port. */
  port: number | null;
  /** Address to listen on (PARLEY_EMAIL_GATEWAY_HOST, default HOST). */
  host: string;
  /** Domain of the channels' addresses (PARLEY_EMAIL_GATEWAY_DOMAIN, default the host of the public URL), lower case. */
  domain: string;
  /** Largest mail accepted, in bytes (PARLEY_EMAIL_GATEWAY_MAX_SIZE_MIB, default 32 MiB, announced as SMTP SIZE). */
  maxMessageBytes: number;
}

/** Zulip's gateway takes mail of up to 32 MiB (aiosmtpd's default data size limit, which it keeps). */
const DEFAULT_MAX_SIZE_MIB = 32;

export function parseEmailGatewayConfig(env: NodeJS.ProcessEnv, host: string, publicUrl: string): EmailGatewayConfig {
  const portValue = env.PARLEY_EMAIL_GATEWAY_PORT;
  let port: number | null = null;
  if (portValue !== undefined && portValue !== '') {
    port = Number(portValue);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PARLEY_EMAIL_GATEWAY_PORT must be a port number, got ${portValue}`);
  }
  const domain = (env.PARLEY_EMAIL_GATEWAY_DOMAIN || new URL(publicUrl).hostname).toLowerCase();
  if (!/^[a-z0-9.-]+$/.test(domain) && !/^\[[0-9a-f:.]+\]$/.test(domain)) {
    throw new Error(`PARLEY_EMAIL_GATEWAY_DOMAIN must be a domain name like chat.example.com, got ${JSON.stringify(domain)}`);
  }
  const sizeValue = env.PARLEY_EMAIL_GATEWAY_MAX_SIZE_MIB ?? String(DEFAULT_MAX_SIZE_MIB);
  const sizeMib = Number(sizeValue);
  if (!Number.isFinite(sizeMib) || sizeMib <= 0) throw new Error(`PARLEY_EMAIL_GATEWAY_MAX_SIZE_MIB must be a positive number of MiB, got ${sizeValue}`);
  return { port, host: env.PARLEY_EMAIL_GATEWAY_HOST || host, domain, maxMessageBytes: Math.floor(sizeMib * 1024 * 1024) };
}
