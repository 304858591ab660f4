// Issue 40 item 6: an ETag is a keyed digest of the body (HMAC under a key derived from the
// credentials key), so a tag seen in a proxy log tells nothing of a body that holds a password,
// and every API process with the same key gives the same tag.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { entityTag, useEntityTagSecret } from '../../src/http/conditional.ts';

const body = (password: string) => JSON.stringify({ success: true, data: { service_number: 1, credentials: { username: 'root', password } } });
const sha1Tags = (text: string) => [createHash('sha1').update(text).digest('base64url'), createHash('sha1').update(text).digest('base64')].map((t) => `"${t}"`);

/** The tag another Node process makes for `text` under `key` (as a second API process would). */
function tagInAnotherProcess(key: Buffer, text: string): string {
  const script = `import { entityTag, useEntityTagSecret } from './src/http/conditional.ts';
useEntityTagSecret(Buffer.from(process.env.TAG_KEY, 'hex'));
process.stdout.write(entityTag(process.env.TAG_BODY));`;
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, TAG_KEY: key.toString('hex'), TAG_BODY: text },
    encoding: 'utf8',
  });
}

test('two bodies differing only in the password give tags that are no SHA-1 of either', () => {
  useEntityTagSecret(randomBytes(32));
  const a = body('Guess-Me-1');
  const b = body('Guess-Me-2');
  const [tagA, tagB] = [entityTag(a), entityTag(b)];
  assert.notEqual(tagA, tagB);
  for (const tag of [tagA, tagB]) for (const sha1 of [...sha1Tags(a), ...sha1Tags(b)]) assert.notEqual(tag, sha1);
  assert.match(tagA, /^"[A-Za-z0-9_-]{27}"$/, 'a strong tag of 160 bits, as before');
});

test('the same body gives the same tag under one key and another tag under another key', () => {
  const text = body('Same-Body');
  const key = randomBytes(32);
  useEntityTagSecret(key);
  const first = entityTag(text);
  assert.equal(entityTag(Buffer.from(text)), first, 'a string and its bytes tag alike');
  useEntityTagSecret(randomBytes(32));
  assert.notEqual(entityTag(text), first, 'a guesser without the key cannot make the tag');
  useEntityTagSecret(key);
  assert.equal(entityTag(text), first);
});

test('two processes with the same credentials key give the same tag', () => {
  const key = randomBytes(32);
  const text = body('Across-Processes');
  useEntityTagSecret(key);
  assert.equal(tagInAnotherProcess(key, text), entityTag(text));
  assert.notEqual(tagInAnotherProcess(randomBytes(32), text), entityTag(text));
});
