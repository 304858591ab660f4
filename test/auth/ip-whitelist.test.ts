import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { displayIp, IpWhitelist, isValidIpRule, parseCallerIp, parseIpRule } from '../../src/auth/ip-whitelist.ts';

const allows = (entries: string[], ip: string | undefined): boolean => new IpWhitelist(entries).allows(ip);

describe('IP whitelist matcher', () => {
  test('exact IPv4 address', () => {
    assert.equal(allows(['203.0.113.7'], '203.0.113.7'), true);
    assert.equal(allows(['203.0.113.7'], '203.0.113.8'), false);
  });

  test('IPv4 CIDR range', () => {
    assert.equal(allows(['10.1.0.0/16'], '10.1.255.254'), true);
    assert.equal(allows(['10.1.0.0/16'], '10.2.0.1'), false);
    assert.equal(allows(['0.0.0.0/0'], '198.51.100.1'), true);
    // A range written from a host address still means the network it falls in.
    assert.equal(allows(['192.168.1.77/24'], '192.168.1.3'), true);
  });

  test('exact IPv6 address, in any spelling', () => {
    assert.equal(allows(['2001:db8::1'], '2001:0db8:0000:0000:0000:0000:0000:0001'), true);
    assert.equal(allows(['2001:DB8::1'], '2001:db8::1'), true);
    assert.equal(allows(['2001:db8::1'], '2001:db8::2'), false);
    assert.equal(allows(['::1'], '::1'), true);
  });

  test('IPv6 CIDR range', () => {
    assert.equal(allows(['2001:db8:abcd::/48'], '2001:db8:abcd:12::5'), true);
    assert.equal(allows(['2001:db8:abcd::/48'], '2001:db8:abce::5'), false);
  });

  test('an IPv4-mapped IPv6 caller is matched as IPv4', () => {
    assert.equal(allows(['127.0.0.1'], '::ffff:127.0.0.1'), true);
    assert.equal(allows(['10.0.0.0/8'], '::ffff:10.20.30.40'), true);
    assert.equal(allows(['10.0.0.0/8'], '::ffff:11.0.0.1'), false);
  });

  test('an IPv4-mapped rule matches the IPv4 caller it names', () => {
    assert.equal(allows(['::ffff:192.0.2.1'], '192.0.2.1'), true);
    assert.equal(allows(['::ffff:192.0.2.0/120'], '192.0.2.200'), true);
    assert.equal(allows(['::ffff:192.0.2.0/120'], '192.0.3.1'), false);
  });

  test('IPv4 and IPv6 never match each other otherwise', () => {
    assert.equal(allows(['::/0'], '203.0.113.7'), false);
    assert.equal(allows(['0.0.0.0/0'], '2001:db8::1'), false);
  });

  test('an address not listed, a missing address or an empty list is refused', () => {
    assert.equal(allows(['203.0.113.0/24', '2001:db8::/32'], '198.51.100.1'), false);
    assert.equal(allows(['203.0.113.0/24'], undefined), false);
    assert.equal(allows(['203.0.113.0/24'], 'not-an-ip'), false);
    assert.equal(allows([], '203.0.113.7'), false);
  });

  test('entries that are not addresses never match and are reported', () => {
    const list = new IpWhitelist(['127.1', '0x7f.0.0.1', '10.0.0.0/33', 'example.com', '', '203.0.113.7']);
    assert.deepEqual(list.invalid, ['127.1', '0x7f.0.0.1', '10.0.0.0/33', 'example.com', '']);
    assert.equal(list.rules.length, 1);
    assert.equal(list.allows('127.0.0.1'), false);
    assert.equal(isValidIpRule(' 2001:db8::/32 '), true);
    assert.equal(isValidIpRule('2001:db8::/129'), false);
    assert.equal(parseIpRule('fe80::1%eth0')?.bits, 128);
  });

  test('a caller address is read strictly: other spellings of an IPv4 address are not addresses', () => {
    for (const caller of ['012.0.0.1', '167772161', '0xa000001', '10.1', '::10.0.0.1', '::ffff:012.0.0.1', '::ffff:0xa.0.0.1', '10.0.0.1 ', '']) {
      assert.equal(allows(['10.0.0.1', '10.0.0.0/8'], caller), false, caller);
      if (caller !== '::10.0.0.1') assert.equal(parseCallerIp(caller), undefined, caller);
    }
    // `::10.0.0.1` is the IPv4-compatible IPv6 address ::a00:1, not IPv4-mapped.
    assert.equal(parseIpRule('::10.0.0.1')?.address.toString(), '::a00:1');
    assert.equal(parseCallerIp('::ffff:10.0.0.1')?.toString(), '10.0.0.1');
    assert.equal(parseCallerIp('1:2:3:4:5:6:10.0.0.1')?.toString(), '1:2:3:4:5:6:a00:1');
    assert.equal(allows(['::a00:1'], '::10.0.0.1'), true);
  });

  test('the logged address is the normalised one', () => {
    assert.equal(displayIp('::ffff:127.0.0.1'), '127.0.0.1');
    assert.equal(displayIp('2001:db8::1'), '2001:db8::1');
    assert.equal(displayIp(undefined), '');
  });
});
