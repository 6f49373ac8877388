// Zulip's ValidationFailureError: the errors of a Django model's full_clean(), collected by field (the
// fields' own checks in the model's field order, then `__all__` for the checks of the whole object and
// its uniqueness), answered as a 400 whose `msg` is the first of them and whose `errors` holds them all.
import { JsonableError } from '../errors.ts';

/** Django's message for an empty required field. */
export const BLANK_FIELD = 'This field cannot be blank.';

export class ValidationFailures {
  private readonly byField = new Map<string, string[]>();

  /** Records a problem of one field (`__all__` for the whole object); fields must be added in the model's order. */
  add(field: string, message: string): void {
    const list = this.byField.get(field);
    if (list) list.push(message);
    else this.byField.set(field, [message]);
  }

  has(field: string): boolean {
    return this.byField.has(field);
  }

  get empty(): boolean {
    return this.byField.size === 0;
  }

  /** Throws the 400 when any problem was recorded. */
  throwIfAny(): void {
    if (this.empty) return;
    // Field errors come before the object's (`__all__`), as Django lists them.
    const entries = [...this.byField].sort(([a], [b]) => Number(a === '__all__') - Number(b === '__all__'));
    throw new JsonableError(entries[0]![1][0]!, { data: { errors: Object.fromEntries(entries) } });
  }
}
