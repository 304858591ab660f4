/**
 * Rules for free text that reaches an e-mail, a workbook or another system (passwords, reasons,
 * customer names, host names), shared by the API and the admin CLI.
 */

/** C0 controls (line breaks and tabs among them), DEL and the C1 controls: Unicode category Cc. */
const CONTROL_CHARACTER = /\p{Cc}/u;

export const CONTROL_CHARACTERS_REASON =
  'must not contain control characters (line breaks, tabs or other characters U+0000-U+001F, U+007F-U+009F)';

export function hasControlCharacters(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/**
 * White space and the characters that show nothing: format characters (Unicode category Cf: zero
 * width spaces and joiners, U+00AD soft hyphen, U+2060 word joiner, bidirectional marks) and the
 * blank letters (Hangul fillers U+115F, U+1160, U+3164, U+FFA0; Braille blank U+2800).
 */
const INVISIBLE = /[\s\p{Cf}\u115F\u1160\u3164\uFFA0\u2800]/gu;

/** Whether a text shows nothing once white space and invisible characters are taken out. */
export function isBlank(text: string): boolean {
  return text.replace(INVISIBLE, '') === '';
}
