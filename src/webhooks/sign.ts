/**
 * The Standard Webhooks signature headers of one delivery attempt, signed by the
 * `standardwebhooks` package (the same code receivers verify with). Sign at each attempt, not
 * when the event is queued: receivers refuse a timestamp more than 5 minutes from their clock.
 */
import { Webhook } from 'standardwebhooks';
import { SECRET_PREFIX } from './secrets.ts';

export interface SignatureHeaders {
  /** The message id: the event's id, the same on every retry, so a receiver can skip repeats. */
  'webhook-id': string;
  /** Unix time in whole seconds of this attempt. */
  'webhook-timestamp': string;
  /** `v1,<base64 HMAC-SHA256>` for each secret, space-separated. */
  'webhook-signature': string;
}

export interface SignatureInput {
  eventId: string;
  /** The exact bytes sent as the request body (JSON text); any change breaks the signature. */
  body: string;
  /**
   * The endpoint's current secrets, each `whsec_…`: during a rotation the new and the old one,
   * so receivers that still hold the old secret keep verifying.
   */
  secrets: readonly string[];
  /** When the attempt is made; now when not given. */
  at?: Date;
}

export function signatureHeaders({ eventId, body, secrets, at = new Date() }: SignatureInput): SignatureHeaders {
  if (eventId === '') throw new Error('a webhook message needs an event id to sign');
  if (secrets.length === 0) throw new Error('a webhook message needs at least one secret to sign with');
  for (const secret of secrets) {
    // The package also takes a bare base64 key; ours always carry the prefix, so a missing one is a bug.
    if (!secret.startsWith(SECRET_PREFIX)) throw new Error(`a webhook secret must start with ${SECRET_PREFIX}`);
  }
  // The header and the signed text carry the same whole second (the package floors the Date).
  const seconds = Math.floor(at.getTime() / 1000);
  const signedAt = new Date(seconds * 1000);
  const signatures = secrets.map((secret) => new Webhook(secret).sign(eventId, signedAt, body));
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signatures.join(' '),
  };
}
