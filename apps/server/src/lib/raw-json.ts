/**
 * A value already serialised as JSON (a cached list, say), held as chunks of text or bytes that the
 * envelope writes out as they are, without serialising or copying them again. `text` and `toJSON`
 * keep it usable wherever a string or a plain value is expected.
 */
export class RawJson {
  readonly chunks: ReadonlyArray<string | Buffer>;
  constructor(...chunks: Array<string | Buffer>) {
    this.chunks = chunks;
  }
  get text(): string {
    return this.chunks.map((c) => (typeof c === 'string' ? c : c.toString('utf8'))).join('');
  }
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}
