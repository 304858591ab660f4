/**
 * Rules for free text that reaches an e-mail, a workbook or another system (passwords, reasons,
 * customer names, host names), shared by the API and the admin CLI.
 */

/**
 * Characters free text refuses: the controls (Unicode category Cc: C0 with line breaks and tabs,
 * DEL, C1); the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069),
 * which reorder what a reader sees around them (a name that reads differently from what it is,
 * "Trojan Source"); and the line and paragraph separators U+2028 and U+2029, which break lines in
 * some readers and in JavaScript source, as a line feed does.
 */
const REFUSED_CHARACTER = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]/u;

export const CONTROL_CHARACTERS_REASON =
  'must not contain control characters (line breaks, tabs or other characters U+0000-U+001F, U+007F-U+009F), ' +
  'bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) or line and paragraph separators (U+2028, U+2029)';

export function hasControlCharacters(text: string): boolean {
  return REFUSED_CHARACTER.test(text);
}

/**
 * What shows nothing: white space; format characters (Cf) and every other default-ignorable code
 * point (Unicode's Default_Ignorable_Code_Point: zero width spaces and joiners, soft hyphen,
 * combining grapheme joiner, variation selectors, Hangul fillers); unassigned (Cn) and private-use
 * (Co) code points, which no font is bound to show; lone surrogates (Cs: in a JavaScript string
 * only a lone one is seen as Cs); and U+2800 Braille blank and U+FFFC object replacement, which
 * stand for nothing.
 */
const INVISIBLE = /[\s\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cn}\p{Co}\p{Cs}\u2800\uFFFC]/gu;

/** Whether a text shows nothing once white space and invisible characters are taken out. */
export function isBlank(text: string): boolean {
  return text.replace(INVISIBLE, '') === '';
}
