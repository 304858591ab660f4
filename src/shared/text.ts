/**
 * Free text reaches e-mails, workbooks and other systems. Bidirectional controls make a name read
 * differently from what it is ("Trojan Source"); U+2028/U+2029 break lines as a line feed does.
 */
const REFUSED_CHARACTER = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]/u;

export const CONTROL_CHARACTERS_REASON =
  'must not contain control characters (line breaks, tabs or other characters U+0000-U+001F, U+007F-U+009F), ' +
  'bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) or line and paragraph separators (U+2028, U+2029)';

export function hasControlCharacters(text: string): boolean {
  return REFUSED_CHARACTER.test(text);
}

/** What shows nothing: no font is bound to show Cn or Co, and in a JavaScript string only a lone surrogate is Cs. */
const INVISIBLE = /[\s\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cn}\p{Co}\p{Cs}\u2800\uFFFC]/gu;

/** Whether a text shows nothing once white space and invisible characters are taken out. */
export function isBlank(text: string): boolean {
  return text.replace(INVISIBLE, '') === '';
}
