/**
 * An event of a change carries `data.previous_attributes` (Stripe's shape): each field of the object
 * that the change altered, with its value before it, in the object's own names and format.
 */
import { isDeepStrictEqual } from 'node:util';

export type PreviousAttributes = Record<string, unknown>;

/** Never a value of these: a credential's change is told by a flag (`password_changed: true`). */
const CREDENTIAL_FIELDS = new Set(['credentials', 'password', 'username']);

/** What a change did besides the fields an object shows: the password is never shown, so only the fact is. */
export interface HiddenChanges {
  passwordChanged?: boolean;
}

/** The fields of `after` whose value differs from `before`'s, with `before`'s value; credentials never. */
export function previousAttributes(before: object, after: object, hidden: HiddenChanges = {}): PreviousAttributes {
  const old = before as Record<string, unknown>;
  const changed: PreviousAttributes = {};
  for (const [field, value] of Object.entries(after)) {
    if (CREDENTIAL_FIELDS.has(field) || !(field in old) || isDeepStrictEqual(old[field], value)) continue;
    changed[field] = old[field];
  }
  if (hidden.passwordChanged) changed.password_changed = true;
  return changed;
}
