/** Spellings of a key that the probes of issue 40 sent, for the redaction tests (unit and end to end). */

/** Issue 40 item 1: each character the probe put into a key, as it was sent in a URL. */
export const SEPARATORS: Array<[string, string]> = [
  ['%0A', '%0A'], ['%20', '%20'], ['%09', '%09'], ['%00', '%00'], ['%2F', '%2F'], ['+', '+'], ['-', '-'], ['.', '.'], ['~', '~'], ['%7F', '%7F'],
  ['a soft hyphen', '%C2%AD'], ['ZWSP', '%E2%80%8B'], ['ZWNJ', '%E2%80%8C'], ['a BOM', '%EF%BB%BF'], ['a double-encoded %256F', '%256F'],
];

/** The first 5 consecutive characters of `secret` that `shown` holds, if any (a key's public prefix is its first 4). */
export function holdsPartOf(shown: string, secret: string): string | undefined {
  for (let i = 0; i + 5 <= secret.length; i++) if (shown.includes(secret.slice(i, i + 5))) return secret.slice(i, i + 5);
  return undefined;
}

/** Issue 40 item 2: the forms of a whole key (`sk_<mode>_<secret>`) the probe sent as a request id. */
export function keyForms(key: string): Array<[string, string]> {
  const mode = key.slice(3, 7);
  const secret = key.slice(8);
  return [
    ['as issued', key],
    ['sk-<mode>-…', `sk-${mode}-${secret}`],
    ['sk<mode>…', `sk${mode}${secret}`],
    ['upper case, dots', `SK.${mode.toUpperCase()}.${secret}`],
    ['without its prefix', secret],
    ['without its prefix, glued to text', `client-${secret}`],
    ['without its prefix, a - after its public 4', `${secret.slice(0, 4)}-${secret.slice(4)}`],
    ['without its prefix, split by . and :', `${secret.slice(0, 10)}.${secret.slice(10, 20)}:${secret.slice(20)}`],
    ['hex of the key', Buffer.from(key).toString('hex')],
    ['hex of the secret', Buffer.from(secret).toString('hex')],
    ['unpadded base64url of the key', Buffer.from(key).toString('base64url')],
    ['unpadded base64url of the secret', Buffer.from(secret).toString('base64url')],
    ['base64url glued to text', `id-${Buffer.from(key).toString('base64url')}`],
    ['reversed', [...key].reverse().join('')],
    ['the secret reversed', [...secret].reverse().join('')],
  ];
}
