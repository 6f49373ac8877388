/**
 * A value already serialised as JSON text (a cached list, say): the envelope splices the text in
 * instead of serialising it again. `toJSON` keeps it usable wherever a plain value is expected.
 */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}
