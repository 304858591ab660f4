/**
 * E-mail addresses, by one rule for the API (customer_email, report recipients) and the CLI
 * (broker e-mail, imported customers): `local@domain.tld`, a dot-atom local part of at most 64
 * characters and a domain of letters, digits and hyphens with at least one dot, 254 characters in
 * all (the same rule as the OpenAPI `email` format of the validator).
 */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

export function isEmailAddress(value: string): boolean {
  if (value.length > 254) return false;
  const at = value.lastIndexOf('@');
  return at > 0 && at <= 64 && EMAIL.test(value);
}
