// The small HTML pages of links sent by e-mail (password reset, e-mail change confirmation): never
// cached, no referrer (the key is in the URL), title and body as given (the body is the caller's HTML).
import type { Response } from 'express';
import { escapeHtml } from '../lib/html.ts';

export function sendPage(res: Response, status: number, title: string, body: string): void {
  res
    .status(status)
    .type('html')
    .set('Cache-Control', 'no-store')
    .set('Referrer-Policy', 'no-referrer')
    .send(
      `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(title)}</title></head>\n<body><main><h1>${escapeHtml(title)}</h1>\n${body}\n</main></body></html>\n`,
    );
}
