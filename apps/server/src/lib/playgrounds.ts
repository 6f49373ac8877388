// Code playgrounds (Zulip's RealmPlayground): validation as Zulip's view and model do it.
import { JsonableError } from '../errors.ts';
import { isValidUrlTemplate, urlTemplateVariables } from './url-templates.ts';
import { BLANK_FIELD, ValidationFailures } from './validation-failure.ts';

/** Zulip's limit of a playground's language (also the spec's maxLength of `pygments_language`). */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;

/**
 * The characters a language may have (Zulip's check, which does not require a language Pygments knows:
 * organizations may have playgrounds for languages of their own). As Zulip writes it, `+-.` is a range,
 * so a comma is allowed too.
 */
const LANGUAGE_CHARACTERS = /^[ a-zA-Z0-9_+,\-./#]*$/;

/** Zulip's check_pygments_language, made on the language as sent (before trimming). */
export function checkPygmentsLanguage(language: string): void {
  if (!LANGUAGE_CHARACTERS.test(language)) throw new JsonableError('Invalid characters in pygments language');
}

/** Django's unique_together message for (realm, pygments_language, name). */
export const DUPLICATE_PLAYGROUND = 'Realm playground with this Realm, Pygments language and Name already exists.';

/**
 * Zulip's RealmPlayground.full_clean of the trimmed fields, but for uniqueness (the caller adds it to
 * `__all__` when name and language have no problem, then throws).
 */
export function checkPlayground(playground: { name: string; pygments_language: string; url_template: string }): ValidationFailures {
  const failures = new ValidationFailures();
  const { name, pygments_language: language, url_template: template } = playground;
  const templateValid = isValidUrlTemplate(template);
  // The model's field order: url_template, name, pygments_language.
  if (template === '') failures.add('url_template', BLANK_FIELD);
  else if (!templateValid) failures.add('url_template', 'Invalid URL template.');
  if (name === '') failures.add('name', BLANK_FIELD);
  if (language === '') failures.add('pygments_language', BLANK_FIELD);
  else if (!LANGUAGE_CHARACTERS.test(language)) failures.add('pygments_language', 'Invalid characters in pygments language');
  if (templateValid) {
    const variables = urlTemplateVariables(template);
    if (!variables.includes('code')) failures.add('__all__', 'Missing the required variable "code" in the URL template');
    else if (variables.length !== 1) failures.add('__all__', '"code" should be the only variable present in the URL template');
  }
  return failures;
}
