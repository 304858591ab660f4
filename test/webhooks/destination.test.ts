import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  assertPublicAddress,
  checkedLookup,
  checkEndpointUrl,
  DestinationRefusedError,
  LOCAL_WAY_OUT,
  resolveAndCheck,
  type RefusalReason,
  type ResolveAll,
} from '../../src/webhooks/destination.ts';

const STRICT = { allowPrivate: false };
const LOOSE = { allowPrivate: true };

/** A refusal that WEBHOOK_ALLOW_PRIVATE_URLS would lift names the way out; the others do not. */
const WAY_OUT = `; ${LOCAL_WAY_OUT}`;
const withWayOut = (refusal: string) => (['a cloud metadata address', 'not an IP address'].includes(refusal) ? refusal : refusal + WAY_OUT);

/** The refusal reason a call throws, or 'ok'. */
function outcome(call: () => unknown): RefusalReason | 'ok' {
  try {
    call();
    return 'ok';
  } catch (error) {
    assert.ok(error instanceof DestinationRefusedError, String(error));
    return error.reason;
  }
}

describe('webhook URL policy (checkEndpointUrl)', () => {
  const rows: Array<[url: string, allowPrivate: boolean, expected: RefusalReason | 'ok']> = [
    ['https://hooks.example.com/webhooks?x=1', false, 'ok'],
    ['https://hooks.example.com:8443/', false, 'ok'],
    ['http://hooks.example.com/webhooks', false, 'scheme'],
    ['http://hooks.example.com/webhooks', true, 'ok'],
    ['ftp://hooks.example.com/', true, 'scheme'],
    ['file:///etc/passwd', true, 'scheme'],
    ['https://user:pass@hooks.example.com/', false, 'credentials'],
    ['https://user@hooks.example.com/', false, 'credentials'],
    ['https://:pass@hooks.example.com/', true, 'credentials'],
    // What the URL parser forgives, and a shown URL would hide: the authority as written decides.
    ['https://hooks.example\\@127.0.0.1/x', true, 'authority'],
    ['https://hooks.example.com\\x', false, 'authority'],
    ['https://hooks.example@127.0.0.1/x', true, 'credentials'],
    ['https://@hooks.example.com/x', false, 'credentials'],
    ['https:///x', false, 'no-host'],
    ['https:hooks.example.com/x', false, 'no-host'],
    ['https:/hooks.example.com/x', false, 'no-host'],
    ['https://hooks.example:0/x', false, 'port'],
    ['https://hooks.example:000/x', false, 'port'],
    ['https://hooks.example:443/x', false, 'ok'],
    ['hooks.example.com/webhooks', false, 'not-a-url'],
    ['https://', false, 'not-a-url'],
    ['', false, 'not-a-url'],
    // An IP-literal host is never looked up, so the URL check judges it.
    ['https://93.184.215.14/', false, 'ok'],
    ['https://[2606:4700:4700::1111]/', false, 'ok'],
    ['https://10.0.0.1/', false, 'address'],
    ['https://10.0.0.1/', true, 'ok'],
    ['https://[::1]:8443/', false, 'address'],
    ['https://[::ffff:127.0.0.1]/', false, 'address'],
    ['https://[::10.0.0.1]/', false, 'address'],
    // Other spellings of 127.0.0.1, which the URL parser writes as 127.0.0.1.
    ['https://0x7f.1/', false, 'address'],
    ['https://2130706433/', false, 'address'],
    ['https://0/', false, 'address'],
    // Names that are this machine whatever DNS says, and trailing-dot spellings (issue 40 item 5).
    ['https://localhost/', false, 'host-name'],
    ['https://LOCALHOST.:19443/', false, 'host-name'],
    ['https://localhost.:19443/', true, 'host-name'],
    ['https://hooks.example.com./', false, 'host-name'],
    ['https://x.localhost/', false, 'host-name'],
    ['https://x.localhost/', true, 'ok'],
    ['https://localhost.example.com/', false, 'ok'],
    ['https://169.254.169.254/latest/meta-data/', true, 'address'],
    ['https://[fd00:ec2::254]/', true, 'address'],
    ['https://[::ffff:169.254.169.254]/', true, 'address'],
  ];
  for (const [url, allowPrivate, expected] of rows) {
    test(`${url || '(empty)'}${allowPrivate ? ' (allowPrivate)' : ''} → ${expected}`, () => {
      assert.equal(outcome(() => checkEndpointUrl(url, { allowPrivate })), expected);
    });
  }

  test('the refusals say what is wrong, without echoing a password', () => {
    assert.throws(() => checkEndpointUrl('http://hooks.example.com/', STRICT), { message: `the webhook URL must use https:, not http:${WAY_OUT}` });
    assert.throws(() => checkEndpointUrl('ftp://hooks.example.com/', LOOSE), { message: 'the webhook URL must use https: or http:, not ftp:' });
    assert.throws(() => checkEndpointUrl('https://u:secret@hooks.example.com/', STRICT), { message: 'the webhook URL must not carry a user name or password' });
    assert.throws(() => checkEndpointUrl('https://10.0.0.1/', STRICT), { message: `address 10.0.0.1 is private${WAY_OUT}`, address: '10.0.0.1' });
  });

  test('the two refusals a receiver on a laptop meets name the way out, in one sentence: the listen command, or the setting', () => {
    for (const url of ['http://hooks.example.com/', 'https://127.0.0.1:4000/hooks', 'https://[::1]/hooks', 'https://192.168.1.20/hooks']) {
      assert.throws(() => checkEndpointUrl(url, STRICT), (error: Error) => {
        assert.match(error.message, /; to receive webhooks on your own machine run npx client-api-v1 listen --forward-to http:\/\/localhost:4000\/hooks, or on a server you run yourself set WEBHOOK_ALLOW_PRIVATE_URLS=true$/);
        assert.doesNotMatch(error.message, /\.\s/, 'one sentence');
        return true;
      });
    }
  });

  test('refusals the setting does not lift name no way out', () => {
    for (const [url, policy] of [['ftp://hooks.example.com/', STRICT], ['https://169.254.169.254/', LOOSE], ['https://u:p@hooks.example.com/', STRICT]] as const) {
      assert.throws(() => checkEndpointUrl(url, policy), (error: Error) => !error.message.includes('listen') && !error.message.includes('WEBHOOK_ALLOW_PRIVATE_URLS'));
    }
  });

  test('returns the URL parsed', () => {
    assert.equal(checkEndpointUrl('https://Hooks.Example.com/a', STRICT).href, 'https://hooks.example.com/a');
    assert.equal(checkEndpointUrl(' HTTPS://hooks.example.com:443/a/../b\t', STRICT).href, 'https://hooks.example.com/b');
  });
});

describe('address policy (assertPublicAddress)', () => {
  // [address, allowPrivate, what the refusal says the address is (null: allowed)]
  const rows: Array<[ip: string, allowPrivate: boolean, refusal: string | null]> = [
    ['93.184.215.14', false, null],
    ['8.8.8.8', false, null],
    ['127.0.0.1', false, 'loopback'],
    ['127.255.255.254', false, 'loopback'],
    ['10.1.2.3', false, 'private'],
    ['172.16.0.1', false, 'private'],
    ['172.31.255.255', false, 'private'],
    ['172.32.0.1', false, null],
    ['192.168.1.1', false, 'private'],
    ['169.254.1.1', false, 'link-local'],
    ['0.0.0.0', false, 'unspecified'],
    ['0.1.2.3', false, 'unspecified'],
    ['224.0.0.1', false, 'multicast'],
    ['255.255.255.255', false, 'broadcast'],
    ['100.64.0.1', false, 'carrier-grade NAT (100.64.0.0/10)'],
    ['100.127.255.255', false, 'carrier-grade NAT (100.64.0.0/10)'],
    ['100.128.0.1', false, null],
    ['240.0.0.1', false, 'reserved'],
    ['2606:4700:4700::1111', false, null],
    ['::1', false, 'loopback'],
    ['::', false, 'unspecified'],
    ['fc00::1', false, 'private (unique local, fc00::/7)'],
    ['fd12:3456::1', false, 'private (unique local, fc00::/7)'],
    ['fe80::1', false, 'link-local'],
    ['fe80::1%eth0', false, 'link-local'],
    ['ff02::1', false, 'multicast'],
    ['::ffff:127.0.0.1', false, 'loopback'],
    ['::ffff:10.0.0.1', false, 'private'],
    ['::ffff:a9fe:101', false, 'link-local'],
    ['::ffff:100.64.0.1', false, 'carrier-grade NAT (100.64.0.0/10)'],
    ['::ffff:8.8.8.8', false, null],
    ['64:ff9b::10.0.0.1', false, 'private'],
    ['64:ff9b::8.8.8.8', false, null],
    // IPv4-compatible (::a.b.c.d, deprecated): never a destination. ipaddr.js reads the dotted
    // spelling as IPv4-mapped, which refuses it too; the URL parser and getaddrinfo write hex.
    ['::a00:1', false, 'IPv4-compatible IPv6 (deprecated)'],
    ['::808:808', false, 'IPv4-compatible IPv6 (deprecated)'],
    ['::10.0.0.1', false, 'private'],
    ['not-an-ip', true, 'not an IP address'],
    // allowPrivate: this machine and its networks, for development and tests.
    ['127.0.0.1', true, null],
    ['10.1.2.3', true, null],
    ['169.254.1.1', true, null],
    ['::1', true, null],
    ['fe80::1', true, null],
    ['::ffff:10.0.0.1', true, null],
    // The cloud metadata addresses, always.
    ['169.254.169.254', false, 'a cloud metadata address'],
    ['169.254.169.254', true, 'a cloud metadata address'],
    ['fd00:ec2::254', true, 'a cloud metadata address'],
    ['fd00:ec2:0:0:0:0:0:254', true, 'a cloud metadata address'],
    ['::ffff:169.254.169.254', true, 'a cloud metadata address'],
    ['::ffff:a9fe:a9fe', true, 'a cloud metadata address'],
    ['64:ff9b::169.254.169.254', true, 'a cloud metadata address'],
    // Every IPv6 spelling of the metadata address (issue 40 item 5): IPv4-compatible, 6to4, NAT64
    // local-use, Teredo (server, and client inverted).
    ['::a9fe:a9fe', true, 'a cloud metadata address'],
    ['2002:a9fe:a9fe::', true, 'a cloud metadata address'],
    ['2002:a9fe:a9fe:1::5', true, 'a cloud metadata address'],
    ['64:ff9b:1::a9fe:a9fe', true, 'a cloud metadata address'],
    ['2001:0:a9fe:a9fe::1', true, 'a cloud metadata address'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', true, 'a cloud metadata address'],
    ['2002:808:808::1', true, null],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true, null],
    ['169.254.170.2', true, 'a cloud metadata address'],
    ['100.100.100.200', true, 'a cloud metadata address'],
  ];
  for (const [ip, allowPrivate, refusal] of rows) {
    test(`${ip}${allowPrivate ? ' (allowPrivate)' : ''} → ${refusal ?? 'allowed'}`, () => {
      if (refusal === null) assert.doesNotThrow(() => assertPublicAddress(ip, { allowPrivate }));
      else assert.throws(() => assertPublicAddress(ip, { allowPrivate }), { name: 'DestinationRefusedError', reason: 'address', message: `address ${ip} is ${withWayOut(refusal)}` });
    });
  }
});

/** A resolver that answers every host with these addresses. */
const answering =
  (...addresses: string[]): ResolveAll =>
  (_host, _options, callback) =>
    callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

/** Calls a lookup function the way net does, with or without `all`. */
function lookUp(lookup: LookupFunction, host: string, all: boolean): Promise<string | LookupAddress[]> {
  return new Promise((resolve, reject) => lookup(host, { all }, (error, address) => (error ? reject(error) : resolve(address))));
}

describe('the connection-time check (checkedLookup)', () => {
  const rows: Array<[addresses: string[], allowPrivate: boolean, refusal: string | null]> = [
    [['93.184.215.14'], false, null],
    [['2606:4700:4700::1111', '93.184.215.14'], false, null],
    [['127.0.0.1'], false, `hooks.example.com resolves to 127.0.0.1, which is loopback${WAY_OUT}`],
    [['::1'], false, `hooks.example.com resolves to ::1, which is loopback${WAY_OUT}`],
    // Any refused address refuses the host: Happy Eyeballs may try the second one.
    [['93.184.215.14', '10.0.0.1'], false, `hooks.example.com resolves to 10.0.0.1, which is private${WAY_OUT}`],
    [['127.0.0.1'], true, null],
    [['169.254.169.254'], true, 'hooks.example.com resolves to 169.254.169.254, which is a cloud metadata address'],
  ];
  for (const [addresses, allowPrivate, refusal] of rows) {
    test(`${addresses.join(', ')}${allowPrivate ? ' (allowPrivate)' : ''} → ${refusal ?? 'allowed'}`, async () => {
      const lookup = checkedLookup({ allowPrivate }, answering(...addresses));
      if (refusal === null) {
        assert.equal(await lookUp(lookup, 'hooks.example.com', false), addresses[0]);
        assert.deepEqual((await lookUp(lookup, 'hooks.example.com', true)) as LookupAddress[], addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
      } else {
        await assert.rejects(lookUp(lookup, 'hooks.example.com', false), { name: 'DestinationRefusedError', reason: 'address', message: refusal });
        await assert.rejects(lookUp(lookup, 'hooks.example.com', true), { message: refusal });
      }
    });
  }

  test('a resolver error passes through', async () => {
    const failing: ResolveAll = (_host, _options, callback) => callback(Object.assign(new Error('getaddrinfo ENOTFOUND nx.example'), { code: 'ENOTFOUND' }), []);
    await assert.rejects(lookUp(checkedLookup(STRICT, failing), 'nx.example', false), { code: 'ENOTFOUND' });
  });
});

describe('a real connection through checkedLookup', () => {
  let server: http.Server;
  let port: number;
  let requests = 0;
  before(async () => {
    server = http.createServer((_req, res) => {
      requests += 1;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** GET http://<host>:<port>/ with the checked lookup: the status, or the connection's error. */
  function get(host: string, lookup: LookupFunction): Promise<number | Error> {
    return new Promise((resolve) => {
      const req = http.get({ host, port, path: '/', agent: false, lookup, family: 4 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', resolve);
    });
  }

  test('localhost (127.0.0.1) is refused before the socket connects, without allowPrivate', async () => {
    const before = requests;
    const result = await get('localhost', checkedLookup(STRICT));
    assert.ok(result instanceof DestinationRefusedError, String(result));
    assert.equal(result.message, `localhost resolves to 127.0.0.1, which is loopback${WAY_OUT}`);
    assert.equal(requests, before);
  });

  test('localhost is reached with allowPrivate', async () => {
    assert.equal(await get('localhost', checkedLookup(LOOSE)), 200);
  });

  test('DNS rebinding: public at registration, loopback at connection: refused at connection', async () => {
    let answers = 0;
    const rebinding: ResolveAll = (host, options, callback) => (answers++ === 0 ? answering('93.184.215.14') : answering('127.0.0.1'))(host, options, callback);
    await resolveAndCheck('https://rebind.example/hook', STRICT, rebinding);
    const before = requests;
    const result = await get('rebind.example', checkedLookup(STRICT, rebinding));
    assert.ok(result instanceof DestinationRefusedError, String(result));
    assert.equal(requests, before);
  });
});

describe('the registration-time check (resolveAndCheck)', () => {
  test('a public host passes and the URL comes back parsed', async () => {
    const url = await resolveAndCheck('https://hooks.example.com/a', STRICT, answering('93.184.215.14'));
    assert.equal(url.href, 'https://hooks.example.com/a');
  });

  test('a host with one private address among public ones is refused', async () => {
    await assert.rejects(resolveAndCheck('https://hooks.example.com/a', STRICT, answering('93.184.215.14', 'fd12::1')), {
      reason: 'address',
      message: `hooks.example.com resolves to fd12::1, which is private (unique local, fc00::/7)${WAY_OUT}`,
    });
  });

  test('localhost is refused by name without allowPrivate, and really resolved with it', async () => {
    await assert.rejects(resolveAndCheck('https://localhost/a', STRICT), { reason: 'host-name', message: `the webhook URL's host localhost is this machine (localhost)${WAY_OUT}` });
    assert.equal((await resolveAndCheck('http://localhost:8080/a', LOOSE)).port, '8080');
  });

  test('a name that resolves to loopback is refused without allowPrivate', async () => {
    await assert.rejects(resolveAndCheck('https://hooks.example.com/a', STRICT, answering('127.0.0.1')), {
      reason: 'address',
      message: `hooks.example.com resolves to 127.0.0.1, which is loopback${WAY_OUT}`,
    });
  });

  test('a host that does not resolve is refused as unresolvable', async () => {
    const failing: ResolveAll = (_host, _options, callback) => callback(Object.assign(new Error('getaddrinfo ENOTFOUND nx.example'), { code: 'ENOTFOUND' }), []);
    await assert.rejects(resolveAndCheck('https://nx.example/', STRICT, failing), {
      reason: 'unresolvable',
      message: "the webhook URL's host nx.example does not resolve (ENOTFOUND); register it once its name resolves to a public address",
    });
  });

  test('the URL rules come first (no lookup for a refused URL)', async () => {
    const never: ResolveAll = () => assert.fail('looked up');
    await assert.rejects(resolveAndCheck('http://hooks.example.com/', STRICT, never), { reason: 'scheme' });
    await assert.rejects(resolveAndCheck('https://10.0.0.1/', STRICT, never), { reason: 'address' });
  });
});
