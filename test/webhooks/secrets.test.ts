import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';

describe('endpoint secrets (src/webhooks/secrets.ts)', () => {
  test('whsec_ and the base64 of 32 bytes', () => {
    const secret = newEndpointSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
  });

  test('the standardwebhooks package takes it as it is', () => {
    const secret = newEndpointSecret();
    const signature = new Webhook(secret).sign('msg_1', new Date(), '{}');
    assert.match(signature, /^v1,[A-Za-z0-9+/]{43}=$/);
  });

  test('each secret is new', () => {
    const secrets = new Set(Array.from({ length: 100 }, () => newEndpointSecret()));
    assert.equal(secrets.size, 100);
  });
});
